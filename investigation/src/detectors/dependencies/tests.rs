//! Dependencies an application cannot reach: connections and DNS, verified by a crash they end
//! or by repeats under an alert about the service's requests; red herrings (a warning the app
//! survives, a line in the middle of a healthy log) stay observations.

use serde_json::json;

use super::*;
use crate::detectors::testing::{
    DESCRIBE_EXIT_78, DESCRIBE_OOM, POD, all_of, all_text, assert_contains, assert_ends_with, ctx,
    describe, detect, ev, find, log_of, previous_log, service_level, shown, titled,
};
use crate::detectors::{Confidence, Fact, Kind, is_service_level};
use crate::evidence::Capability;

/// A container that exited 1 with `log` as its previous log, and what the round finds.
fn crashed_with(log: &str) -> Vec<Finding> {
    let evidence = [
        describe(1, &DESCRIBE_EXIT_78.replace("78", "1")),
        previous_log(2, log),
    ];
    detect(&evidence, &ctx())
}

#[test]
fn dependency_connection_and_dns_errors_in_logs() {
    let log = "\
2025-03-04T14:02:00Z INFO starting
2025-03-04T14:02:01Z ERROR dial tcp 10.20.0.7:5432: connect: connection refused
2025-03-04T14:02:02Z ERROR could not connect to server: Connection refused Is the server running on host \"orders-db.prod.svc\" (10.20.0.7) and accepting TCP/IP connections on port 5432?
2025-03-04T14:02:03Z FATAL giving up after 3 attempts
";
    let findings = crashed_with(log);
    let dep = find(&findings, Kind::Dependency);
    assert!(dep.verified);
    assert!(
        all_text(dep).contains("10.20.0.7:5432") || all_text(dep).contains("could not connect"),
        "{dep:#?}"
    );

    let dns_log =
        "ERROR lookup payments-db.prod.svc.cluster.local on 10.96.0.10:53: no such host\n";
    let evidence = [describe(1, DESCRIBE_EXIT_78), previous_log(2, dns_log)];
    let findings = detect(&evidence, &ctx());
    let dns = find(&findings, Kind::Dependency);
    assert_contains(&dns.title(), "DNS");
    assert_contains(&dns.title(), "payments-db.prod.svc.cluster.local");
    // A DNS finding is about the name that does not resolve.
    assert_eq!(
        dns.resource().as_deref(),
        Some("payments-db.prod.svc.cluster.local")
    );
}

#[test]
fn red_herring_warning_ranks_below_the_real_cause() {
    let log = "\
2025-03-04T14:00:00Z INFO starting
2025-03-04T14:00:01Z WARN failed to connect to statsd:8125, metrics disabled
2025-03-04T14:00:02Z INFO ready
2025-03-04T14:00:03Z INFO GET /pay 200
2025-03-04T14:00:04Z INFO GET /pay 200
2025-03-04T14:00:05Z INFO GET /pay 200
2025-03-04T14:00:06Z INFO GET /pay 200
2025-03-04T14:00:07Z INFO GET /pay 200
2025-03-04T14:00:08Z INFO GET /pay 200
2025-03-04T14:00:09Z INFO GET /pay 200
2025-03-04T14:00:10Z INFO GET /pay 200
2025-03-04T14:00:11Z INFO allocating batch buffer
";
    let evidence = [describe(1, DESCRIBE_OOM), previous_log(2, log)];
    let findings = detect(&evidence, &ctx());
    assert_eq!(findings[0].kind(), Kind::OomKilled);
    let herring = find(&findings, Kind::Dependency);
    assert!(
        !herring.verified,
        "not at the end of the log: not the cause"
    );
    assert!(herring.confidence < findings[0].confidence);
}

#[test]
fn warning_level_dependency_line_beside_a_crash_is_not_the_cause() {
    let log = "\
2025-01-01T00:00:00.010Z INFO  inventory-sync 3.2.0 starting
2025-01-01T00:00:00.022Z WARN  cache: redis cache-redis-master.inventory.svc.cluster.local:6379: connection refused; continuing without cache
2025-01-01T00:00:00.052Z INFO  migrate: applying 0042_add_sku_index.sql
2025-01-01T00:00:00.067Z FATAL migrate: 0042_add_sku_index.sql failed: ERROR: column \"sku\" does not exist (SQLSTATE 42703)
2025-01-01T00:00:00.068Z INFO  exiting with status 1
";
    let evidence = [describe(1, DESCRIBE_EXIT_78), previous_log(2, log)];
    let findings = detect(&evidence, &ctx());
    let herring = find(&findings, Kind::Dependency);
    assert!(!herring.verified, "logged as a warning the app survives");
    assert_eq!(herring.confidence, Confidence::Medium);
    // Intentional change: the crash line is its own finding; the exit stays unverified.
    let crash = find(&findings, Kind::CrashLine);
    assert!(crash.verified);
    assert_contains(&crash.title(), "0042_add_sku_index");
    assert!(findings[0].verified);
    assert_ne!(findings[0].kind(), Kind::Dependency);

    // The same connection error at error level, as the process's last words, is the cause.
    let fatal = "\
time=2025-01-01T00:00:07Z level=WARN msg=\"database not ready, retrying\" err=\"dial tcp 10.96.41.7:5432: connect: connection refused\"
time=2025-01-01T00:00:15Z level=ERROR msg=\"giving up on database\" attempts=5 err=\"failed to connect to `host=orders-db-rw.orders.svc.cluster.local user=orders database=orders`: dial error (dial tcp 10.96.41.7:5432: connect: connection refused)\"
";
    let evidence = [describe(1, DESCRIBE_EXIT_78), previous_log(2, fatal)];
    let findings = detect(&evidence, &ctx());
    let dependency = find(&findings, Kind::Dependency);
    assert!(dependency.verified);
    // The quote keeps the error itself, not just the long line's timestamp and fields.
    assert!(
        shown(&dependency.refs[0].quote).contains("connection refused"),
        "{:?}",
        dependency.refs[0].quote
    );
}

#[test]
fn quote_around_keeps_a_late_match_and_stays_verbatim() {
    use crate::detectors::text::quote_around;
    let line = format!("{} connect: connection refused", "x".repeat(300));
    let quote = quote_around(&line, line.len());
    assert!(line.contains(&quote));
    assert!(shown(&quote).contains("connection refused"), "{quote:?}");
    let short = "ERROR dial tcp: connection refused";
    assert_eq!(quote_around(short, short.len()), short);
    // Multi-byte characters before the match: still a char boundary, still verbatim.
    let wide = format!("{} dial: connection refused", "é".repeat(250));
    let quote = quote_around(&wide, wide.len());
    assert!(wide.contains(&quote) && quote.contains("connection refused"));
}

// ---------------------------------------------------------------------------------------------
// Failure classes repeated across a round's logs (service-level alerts)

const REFUSED_TWICE: &str = "\
2025-03-04T14:01:00Z ERROR charge failed: dial tcp 10.20.0.7:5432: connect: connection refused
2025-03-04T14:01:05Z INFO GET /pay 200
2025-03-04T14:01:10Z ERROR charge failed: dial tcp 10.20.0.7:5432: connect: connection refused
";

#[test]
fn a_failure_repeated_at_error_level_under_a_service_level_alert_is_verified_at_medium() {
    let findings = detect(&[log_of(1, POD, REFUSED_TWICE)], &service_level());
    let dependency = find(&findings, Kind::Dependency);
    assert_eq!(
        dependency.title(),
        "Cannot connect to dependency 10.20.0.7:5432"
    );
    assert!(dependency.verified, "{dependency:#?}");
    assert_eq!(dependency.confidence, Confidence::Medium);

    // The same log under an alert that is not about the service's requests: no crash was
    // observed, so it stays an observation.
    let findings = detect(&[log_of(1, POD, REFUSED_TWICE)], &ctx());
    let dependency = find(&findings, Kind::Dependency);
    assert!(!dependency.verified);
    assert_eq!(dependency.confidence, Confidence::Low);
}

#[test]
fn a_single_failure_line_under_a_service_level_alert_stays_unverified() {
    let once = "\
2025-03-04T14:01:00Z ERROR charge failed: dial tcp 10.20.0.7:5432: connect: connection refused
2025-03-04T14:01:05Z INFO GET /pay 200
";
    let findings = detect(&[log_of(1, POD, once)], &service_level());
    let dependency = find(&findings, Kind::Dependency);
    assert!(!dependency.verified, "one line is an anecdote");
    assert_eq!(dependency.confidence, Confidence::Low);
}

#[test]
fn a_line_the_log_store_returns_again_is_one_line_not_a_repeat() {
    let line = "2025-03-04T14:01:00Z ERROR charge failed: dial tcp 10.20.0.7:5432: connect: connection refused";
    let store = |text: &str| {
        crate::detectors::testing::ev(
            2,
            Capability::LogQuery,
            json!({"query": "{namespace=\"shop\"}"}),
            &format!(r#"[{{"labels":{{"namespace":"shop"}},"line":"{text}","timestamp":"1"}}]"#),
        )
    };
    let findings = detect(&[log_of(1, POD, line), store(line)], &service_level());
    assert!(
        !find(&findings, Kind::Dependency).verified,
        "the same event, shipped twice"
    );

    // Another pod's line in the store is another event.
    let other = line.replace("14:01:00Z", "14:01:07Z");
    let findings = detect(&[log_of(1, POD, line), store(&other)], &service_level());
    assert!(find(&findings, Kind::Dependency).verified);
}

#[test]
fn failure_lines_logged_below_error_level_do_not_count_as_repeats() {
    let warned = "\
2025-03-04T14:01:00Z WARN cache: dial tcp 10.20.0.9:6379: connect: connection refused
2025-03-04T14:01:05Z INFO GET /pay 200
2025-03-04T14:01:10Z WARN cache: dial tcp 10.20.0.9:6379: connect: connection refused
";
    let findings = detect(&[log_of(1, POD, warned)], &service_level());
    assert!(!find(&findings, Kind::Dependency).verified);

    // A warning and then an error of the same class: one repeat, not two (the finding's
    // latest line is the error, so only the count keeps it unverified).
    let mixed = "\
time=2025-03-04T14:01:00Z level=warn msg=\"retrying\" err=\"dial tcp 10.20.0.7:5432: connect: connection refused\"
2025-03-04T14:01:10Z ERROR charge failed: dial tcp 10.20.0.7:5432: connect: connection refused
";
    let findings = detect(&[log_of(1, POD, mixed)], &service_level());
    assert!(!find(&findings, Kind::Dependency).verified);
}

#[test]
fn failure_lines_are_counted_across_every_log_of_the_round() {
    let line = "2025-03-04T14:01:00Z ERROR charge failed: dial tcp 10.20.0.7:5432: connect: connection refused\n";
    let evidence = [
        log_of(1, POD, line),
        log_of(2, "payments-api-7d9f8c6b5-h8r2m", line),
    ];
    let findings = detect(&evidence, &service_level());
    let dependency = find(&findings, Kind::Dependency);
    assert!(dependency.verified, "{dependency:#?}");
    assert_eq!(dependency.confidence, Confidence::Medium);
    assert_eq!(
        all_of(&findings, Kind::Dependency).len(),
        1,
        "one endpoint, one finding: {findings:#?}"
    );
    assert_eq!(dependency.refs.len(), 2, "a quote from each log");
}

#[test]
fn failure_classes_are_counted_separately() {
    // Two DNS failures do not corroborate one refused connection.
    let log = "\
2025-03-04T14:01:00Z ERROR lookup ledger.payments.svc.cluster.local on 10.96.0.10:53: no such host
2025-03-04T14:01:05Z ERROR lookup ledger.payments.svc.cluster.local on 10.96.0.10:53: no such host
2025-03-04T14:01:10Z ERROR charge failed: dial tcp 10.20.0.7:5432: connect: connection refused
";
    let findings = detect(&[log_of(1, POD, log)], &service_level());
    let dns = titled(
        &findings,
        Kind::Dependency,
        "DNS resolution failing for ledger.payments.svc.cluster.local",
    );
    assert!(dns.verified);
    let refused = titled(
        &findings,
        Kind::Dependency,
        "Cannot connect to dependency 10.20.0.7:5432",
    );
    assert!(!refused.verified);
}

#[test]
fn a_warning_in_a_log_store_answer_is_downplayed_as_in_a_container_log() {
    let lines = [
        r#"time=2025-03-04T14:01:00Z level=ERROR msg=\"charge failed\" err=\"dial tcp 10.20.0.7:5432: connect: connection refused\""#,
        r#"time=2025-03-04T14:01:10Z level=ERROR msg=\"charge failed\" err=\"dial tcp 10.20.0.7:5432: connect: connection refused\""#,
        r#"time=2025-03-04T14:01:20Z level=WARN msg=\"cache unavailable, continuing\" err=\"dial tcp 10.20.0.9:6379: connect: connection refused\""#,
    ];
    let loki = format!(
        "[{}]",
        lines
            .iter()
            .map(|l| format!(r#"{{"labels":{{"app":"payments-api"}},"line":"{l}"}}"#))
            .collect::<Vec<_>>()
            .join(",")
    );
    let container = lines.join("\n").replace("\\\"", "\"");
    for item in [
        ev(
            1,
            Capability::LogQuery,
            json!({"query": "{app=\"payments-api\"}"}),
            &loki,
        ),
        log_of(1, POD, &container),
    ] {
        let shape = format!("{:?}", item.capability);
        let findings = detect(std::slice::from_ref(&item), &service_level());
        let to = |endpoint: &str| {
            titled(
                &findings,
                Kind::Dependency,
                &format!("Cannot connect to dependency {endpoint}"),
            )
        };
        assert!(to("10.20.0.7:5432").verified, "{shape}");
        assert!(
            !to("10.20.0.9:6379").verified,
            "{shape}: only logged as a warning the service survives"
        );
    }
}

#[test]
fn a_catalogue_alert_about_objects_is_not_service_level_whatever_its_words() {
    // Whether repeats may verify a dependency depends on the alert being about requests.
    let target = |alertname: &str, summary: &str| firstline_alert::AlertTarget {
        alertname: Some(alertname.to_string()),
        summary: Some(summary.to_string()),
        ..firstline_alert::AlertTarget::default()
    };
    assert!(!is_service_level(&target(
        "KubeCPUOvercommit",
        "Cluster has overcommitted CPU resource requests."
    )));
    assert!(!is_service_level(&target(
        "KubePersistentVolumeErrors",
        "PersistentVolume is having issues with provisioning."
    )));
    assert!(is_service_level(&target(
        "KubeAPIErrorBudgetBurn",
        "The API server is burning too much error budget."
    )));
    assert!(is_service_level(&target(
        "CheckoutHighErrorRate",
        "checkout 5xx ratio above 5%"
    )));
    assert!(is_service_level(&target(
        "SMS send failure ratio high",
        "sms-notifier is failing to send SMS"
    )));
    assert!(!is_service_level(&target(
        "NightlyBackupMissing",
        "no backup finished in 26 hours"
    )));
    // A managed resource's own alert (a CloudWatch dimension): its clients' repeated failures
    // toward it are what it measures.
    let queue = firstline_alert::AlertTarget {
        alertname: Some("SQSOldestMessageAgeHigh".into()),
        labels: [(
            "dimension_QueueName".to_string(),
            "order-events".to_string(),
        )]
        .into(),
        ..firstline_alert::AlertTarget::default()
    };
    assert!(is_service_level(&queue));
    // A stopped flow fails like a service, whatever it names.
    assert_eq!(
        crate::detectors::alert_symptom(&target(
            "Node log shipping stopped",
            "Logs from worker-us-2b-11 are missing in Loki"
        )),
        crate::detectors::Symptom::Errors
    );
}

// ---------------------------------------------------------------------------------------------
// DNS timeouts

#[test]
fn lookups_timing_out_at_the_dns_server_are_one_dns_timeout_finding() {
    let log = r#"time=2025-03-04T14:01:00Z level=ERROR msg="quote failed" err="Post \"https://api.carrierhub.io/v3/quotes\": dial tcp: lookup api.carrierhub.io on 10.96.0.10:53: read udp 10.244.5.23:48812->10.96.0.10:53: i/o timeout"
time=2025-03-04T14:01:02Z level=ERROR msg="cache lookup failed" err="dial tcp: lookup rates-cache.logistics.svc.cluster.local on 10.96.0.10:53: read udp 10.244.5.23:36122->10.96.0.10:53: i/o timeout"
"#;
    let findings = detect(&[log_of(1, "shipping-rates-6b8d7c5f9-abcde", log)], &ctx());
    let dependencies = all_of(&findings, Kind::Dependency);
    assert_eq!(dependencies.len(), 1, "{dependencies:#?}");
    let dns = dependencies[0];
    assert_eq!(dns.title(), "DNS lookups time out at 10.96.0.10:53");
    assert_contains(
        &dns.detail(),
        "DNS queries get no answer in time from 10.96.0.10:53 (2 times)",
    );
    assert_ends_with(&dns.refs[0].quote, "i/o timeout\"");
    let Fact::Dependency(d) = &dns.fact else {
        panic!("{dns:#?}");
    };
    assert_eq!(d.failure, DependencyFailure::DnsTimeout);
}

#[test]
fn a_refusal_that_names_no_endpoint_is_not_given_a_made_up_name() {
    let log = "\
2025-03-04T14:02:00Z INFO starting
2025-03-04T14:02:01Z ERROR upstream: connection refused
2025-03-04T14:02:02Z FATAL giving up after 3 attempts
";
    let findings = crashed_with(log);
    let dep = find(&findings, Kind::Dependency);
    let Fact::Dependency(d) = &dep.fact else {
        unreachable!("a dependency finding holds a Dependency");
    };
    assert_eq!(d.endpoint, None);
    assert_eq!(
        dep.title(),
        "Cannot connect to a dependency the log does not name"
    );
    // Without a name there is nothing to merge on or to point a step at.
    assert_eq!(dep.subject(), None);
    assert!(!d.merges_with(d));
}

#[test]
fn timeouts_toward_several_destinations_point_at_the_clients_node() {
    let log = r#"{"level":"error","msg":"db","error":"dial tcp 10.96.44.12:5432: i/o timeout"}
{"level":"error","msg":"s3","error":"lookup images.s3.amazonaws.com on 10.96.0.10:53: read udp 10.244.1.9:51812->10.96.0.10:53: i/o timeout"}
"#;
    let pod = "catalog-api-6b8f9d7c54-2kx9q";
    let findings = detect(&[log_of(1, pod, log)], &service_level());
    let dependencies: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.kind() == Kind::Dependency)
        .collect();
    assert_eq!(dependencies.len(), 2, "{findings:#?}");
    // The client's node first; the database's side is still followed after it.
    for d in &dependencies {
        assert_eq!(
            d.fact.leads().first(),
            Some(&Lead::ClientNode { pod: pod.into() }),
            "{d:#?}"
        );
    }
    let db = dependencies
        .iter()
        .find(|d| d.title().contains("10.96.44.12:5432"))
        .expect("the database's failing calls");
    assert!(db.fact.leads().contains(&Lead::Host {
        host: "10.96.44.12".into(),
        port: Some(5432),
        namespace: None,
    }));
    // One destination timing out says nothing about the client's side.
    let one = r#"{"level":"error","msg":"db","error":"dial tcp 10.96.44.12:5432: i/o timeout"}
"#;
    let findings = detect(&[log_of(1, pod, one)], &service_level());
    let Fact::Dependency(d) = &find(&findings, Kind::Dependency).fact else {
        unreachable!()
    };
    assert!(!d.client_side);
}

#[test]
fn a_call_that_waits_out_its_deadline_is_slow_and_a_connect_timeout_is_not() {
    let failure = |line: &str| -> Option<DependencyFailure> {
        let findings = detect(
            &[log_of(1, POD, &format!("{line}\n{line}\n"))],
            &service_level(),
        );
        all_of(&findings, Kind::Dependency)
            .first()
            .and_then(|f| match &f.fact {
                Fact::Dependency(d) => Some(d.failure),
                _ => None,
            })
    };
    assert_eq!(
        failure(
            r#"ERROR search failed: perform request: Post "http://search-es.catalog.svc:9200/products/_search": context deadline exceeded"#
        ),
        Some(DependencyFailure::Slow)
    );
    assert_eq!(
        failure("java.net.SocketTimeoutException: Read timed out calling pricing.shop.svc:8080"),
        Some(DependencyFailure::Slow)
    );
    // Timing out before the connection was made is a connection that fails.
    assert_eq!(
        failure("java.net.SocketTimeoutException: connect timed out to pricing.shop.svc:8080"),
        Some(DependencyFailure::Connect)
    );
    // A deadline that names nothing, and a configuration dump, are no call to look into.
    assert_eq!(
        failure("ERROR remote write failed: context deadline exceeded"),
        None
    );
    assert_eq!(
        failure("INFO client settings: readTimeout=30000 host=pricing.shop.svc:8080"),
        None
    );
}
