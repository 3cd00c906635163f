//! Refusals in the servers' own words: each state from a real server's wording, verified by
//! repeats under a service-level alert, one line in a healthy log an observation, and the lead
//! to the dependency's side only for names inside the cluster.

use super::*;
use crate::detectors::testing::{all_of, ctx, detect, find, log_of, service_level};
use crate::detectors::{Kind, Lead};

const CLIENT: &str = "checkout-7d9f6c8b54-2lq8n";

fn refusal_in(log: &str) -> Refusal {
    let findings = detect(&[log_of(1, CLIENT, log)], &service_level());
    match &find(&findings, Kind::Refusal).fact {
        crate::detectors::Fact::Refusal(r) => r.clone(),
        other => panic!("not a refusal: {other:?}"),
    }
}

#[test]
fn each_state_in_the_servers_own_words() {
    let cases = [
        (
            r#"{"level":"error","msg":"session write failed","error":"READONLY You can't write against a read only replica.","redis":"session-redis-0.session-redis-headless.shop.svc.cluster.local:6379"}"#,
            RefusedState::ReadOnly,
        ),
        (
            "ERROR: cannot execute UPDATE in a read-only transaction",
            RefusedState::ReadOnly,
        ),
        (
            "ERROR BulkIndexError: {'status': 429, 'error': {'type': 'cluster_block_exception', 'reason': 'index [products-v12] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block]'}}",
            RefusedState::ReadOnly,
        ),
        (
            "ERROR redis: OOM command not allowed when used memory > 'maxmemory'.",
            RefusedState::Full,
        ),
        (
            r#"{"level":"error","msg":"idempotency key write failed","err":{"type":"ReplyError","message":"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled"}}"#,
            RefusedState::CannotPersist,
        ),
        (
            r#"ERROR: could not extend file "base/16384/2619": No space left on device"#,
            RefusedState::CannotPersist,
        ),
        (
            r#"[2025-01-01T09:41:01.399Z] "POST /v2/rates/compute HTTP/1.1" 503 UO upstream_reset_before_response_started{overflow} - "-" 412 81 0 - "-" "Java-http-client/21.0.5" "8d1f" "rate-engine.pricing.svc.cluster.local:8080" "-""#,
            RefusedState::Overflow,
        ),
        (
            r#"WARN RateEngineClient : rate-engine POST /v2/rates/compute -> 503 "upstream connect error or disconnect/reset before headers. reset reason: overflow""#,
            RefusedState::Overflow,
        ),
        (
            "ERROR 1205 (HY000): Lock wait timeout exceeded; try restarting transaction",
            RefusedState::Locked,
        ),
        (
            "ERROR:  canceling statement due to lock timeout",
            RefusedState::Locked,
        ),
        (
            "error insert failed: code: 252, message: Too many parts (3001). Merges are processing significantly slower than inserts",
            RefusedState::Overloaded,
        ),
        (
            "ERROR es_rejected_execution_exception: rejected execution of coordinating operation",
            RefusedState::Overloaded,
        ),
        (
            "ERROR LOADING Redis is loading the dataset in memory",
            RefusedState::NotServing,
        ),
        (
            "FATAL:  the database system is in recovery mode",
            RefusedState::NotServing,
        ),
        (
            "ERROR kafka: LEADER_NOT_AVAILABLE for orders-0",
            RefusedState::NotServing,
        ),
        (
            "caused by: XMinioStorageFull: Storage backend has reached its minimum free drive threshold. Please delete a few objects to proceed.",
            RefusedState::Full,
        ),
    ];
    for (line, state) in cases {
        let log = format!("{line}\n{line}\n");
        assert_eq!(refusal_in(&log).state, state, "{line}");
    }
}

#[test]
fn repeated_under_a_service_level_alert_it_is_verified_and_names_the_dependency() {
    let line = r#"{"level":"error","msg":"session write failed","error":"READONLY You can't write against a read only replica.","redis":"session-redis-0.session-redis-headless.shop.svc.cluster.local:6379"}"#;
    let findings = detect(
        &[log_of(1, CLIENT, &format!("{line}\n{line}\n"))],
        &service_level(),
    );
    let refusal = find(&findings, Kind::Refusal);
    assert!(refusal.verified);
    assert!(refusal.title().contains("READONLY"), "{}", refusal.title());
    assert!(
        refusal
            .title()
            .contains("session-redis-0.session-redis-headless.shop.svc.cluster.local:6379"),
        "{}",
        refusal.title()
    );
    assert_eq!(
        refusal.fact.leads(),
        [Lead::Host {
            host: "session-redis-0.session-redis-headless.shop.svc.cluster.local".into(),
            port: Some(6379),
            namespace: None,
        }]
    );
}

#[test]
fn one_line_in_a_healthy_log_is_an_observation() {
    let log = "INFO GET /health 200\nERROR deadlock detected\nINFO GET /orders 200\n";
    let findings = detect(&[log_of(1, CLIENT, log)], &ctx());
    let refusal = find(&findings, Kind::Refusal);
    assert!(!refusal.verified);
}

#[test]
fn a_warning_repeated_is_not_verified() {
    let log = "WARN flood stage disk watermark [95%] exceeded on [node-1]\nWARN flood stage disk watermark [95%] exceeded on [node-1]\n";
    let findings = detect(&[log_of(1, CLIENT, log)], &service_level());
    assert!(all_of(&findings, Kind::Refusal).iter().all(|f| !f.verified));
}

#[test]
fn a_rate_limit_the_client_retries_at_warning_level_is_still_verified() {
    // The client logs each batch's 429s as a warning (it requeues them); Twilio still refused.
    let line = r#"{"level":"warn","msg":"batch done with failures; failed messages moved to retry","failed":39,"first_error":"Status: 429 - ApiError 20429: Too Many Requests"}"#;
    let findings = detect(
        &[log_of(1, CLIENT, &format!("{line}\n{line}\n"))],
        &service_level(),
    );
    let refusal = find(&findings, Kind::Refusal);
    assert_eq!(refusal.fact.kind(), Kind::Refusal);
    assert!(refusal.verified, "{refusal:#?}");
    // Not without a service-level alert.
    let findings = detect(&[log_of(1, CLIENT, &format!("{line}\n{line}\n"))], &ctx());
    assert!(!find(&findings, Kind::Refusal).verified);
}

#[test]
fn an_outside_dependency_proposes_no_lead_and_lines_without_a_refusal_find_nothing() {
    let refusal = refusal_in(
        "ERROR write to mongo.example.com:27017 failed: NotWritablePrimary\nERROR write to mongo.example.com:27017 failed: NotWritablePrimary\n",
    );
    assert_eq!(
        refusal.dependency.as_deref(),
        Some("mongo.example.com:27017")
    );
    assert!(refusal.leads().is_empty());

    let findings = detect(
        &[log_of(
            1,
            CLIENT,
            "ERROR request failed: status 500\nERROR timeout\n",
        )],
        &service_level(),
    );
    assert!(all_of(&findings, Kind::Refusal).is_empty());
}

#[test]
fn the_services_own_access_log_answering_429_is_not_a_dependency_throttling() {
    let log = "10.0.0.1 - - \"GET /api/search HTTP/1.1\" 429 12\n10.0.0.2 - - \"GET /api/search HTTP/1.1\" 429 12\n";
    let findings = detect(&[log_of(1, CLIENT, log)], &service_level());
    assert!(all_of(&findings, Kind::Refusal).is_empty(), "{findings:#?}");
}

#[test]
fn credentials_refused_as_the_client_hears_it_not_a_servers_log_of_a_strangers_login() {
    for line in [
        r#"{"severity":"ERROR","message":"failed to get instance metadata: googleapi: Error 403: boss::NOT_AUTHORIZED: Not authorized to access resource. Possibly missing permission cloudsql.instances.get"}"#,
        "ERROR charge failed: provider=acmepay status=401 Unauthorized",
        "ERROR software.amazon.awssdk.services.sqs.model.KmsAccessDeniedException: The ciphertext refers to a customer master key that does not exist",
        "ERROR rpc error: code = PermissionDenied desc = PERMISSION_DENIED: caller does not have permission",
    ] {
        let log = format!("{line}\n{line}\n");
        assert_eq!(refusal_in(&log).state, RefusedState::Denied, "{line}");
    }
    // The database's own account of someone else's failed login refuses no client of ours.
    let server = "2025-01-01 00:00:10.121 UTC [918251] FATAL:  password authentication failed for user \"metabase\"\n";
    let findings = detect(
        &[log_of(1, "catalog-db-0", &server.repeat(3))],
        &service_level(),
    );
    assert!(all_of(&findings, Kind::Refusal).is_empty(), "{findings:#?}");
}

#[test]
fn a_sidecars_refusal_explains_its_pods_failing_calls_to_localhost() {
    let sidecar = crate::detectors::testing::ev(
        1,
        crate::evidence::Capability::PodLogsCurrent,
        serde_json::json!({"namespace": "billing", "name": CLIENT, "container": "cloud-sql-proxy"}),
        &r#"{"severity":"ERROR","message":"failed to connect to instance: googleapi: Error 403: boss::NOT_AUTHORIZED: Not authorized to access resource"}
"#
        .repeat(2),
    );
    let app = crate::detectors::testing::ev(
        2,
        crate::evidence::Capability::PodLogsCurrent,
        serde_json::json!({"namespace": "billing", "name": CLIENT, "container": "api"}),
        &"{\"level\":\"error\",\"msg\":\"acquire connection\",\"error\":\"failed to connect to `user=invoice database=billing`: 127.0.0.1:5432 (127.0.0.1): failed to receive message: unexpected EOF\"}\n".repeat(2),
    );
    let findings = detect(&[sidecar, app], &service_level());
    let refusal = find(&findings, Kind::Refusal);
    assert!(refusal.verified);
    assert!(
        refusal.detail().contains("container `cloud-sql-proxy`"),
        "{}",
        refusal.detail()
    );
    let to_sidecar = all_of(&findings, Kind::Dependency)
        .into_iter()
        .find(|f| f.title().contains("127.0.0.1:5432"))
        .expect("the client's failing calls");
    // The client's end is a symptom; the sidecar's refusal is why.
    assert_eq!(to_sidecar.role(), crate::detectors::Role::Symptom);
    assert!(refusal.explains(to_sidecar));
    assert_eq!(
        to_sidecar.fact.leads(),
        [Lead::Sidecars {
            pod: CLIENT.into(),
            port: Some(5432)
        }]
    );
}

#[test]
fn a_job_whose_log_ends_waiting_on_the_same_lock_is_stuck_on_it() {
    let wait = r#"2025-01-01T06:00:30.070Z WARN  lock reconcile:warehouse is held by another session: pid=48211 application_name=warehouse-reconcile-28911960-q8k2m state="idle in transaction"; waiting (retry in 60s)"#;
    let log = format!(
        "INFO starting\nINFO acquiring advisory lock reconcile:warehouse\n{wait}\n{wait}\n{wait}\n"
    );
    let not_completed = crate::detectors::DetectionContext {
        symptom: crate::detectors::Symptom::JobFailed,
        ..ctx()
    };
    let findings = detect(&[log_of(1, CLIENT, &log)], &not_completed);
    let refusal = find(&findings, Kind::Refusal);
    assert!(refusal.verified, "{refusal:#?}");
    assert!(refusal.title().contains("48211"), "{}", refusal.title());

    // A process that went on to other work is not stuck, nor is one under an alert about
    // something else.
    let moved_on = format!("{wait}\n{wait}\n{wait}\nINFO lock acquired; reconciling\n");
    let findings = detect(&[log_of(1, CLIENT, &moved_on)], &not_completed);
    assert!(!find(&findings, Kind::Refusal).verified);
    let findings = detect(&[log_of(1, CLIENT, &log)], &ctx());
    assert!(!find(&findings, Kind::Refusal).verified);
}

#[test]
fn an_unready_pod_stuck_on_a_migration_lock_is_verified_whatever_the_alert() {
    let wait = "2025-01-01 00:00:14,118 INFO  [liquibase.lockservice] (main) Waiting for changelog lock....";
    let log = format!("INFO Database info: PostgreSQL 16.3\n{wait}\n{wait}\n{wait}\n");
    let unready = "\
apiVersion: v1
kind: Pod
metadata:
  name: checkout-7d9f6c8b54-2lq8n
  namespace: shop
status:
  phase: Running
  conditions:
  - type: Ready
    status: 'False'
  containerStatuses:
  - name: api
    ready: false
    restartCount: 2
";
    let findings = detect(
        &[
            crate::detectors::testing::object(1, "Pod", unready),
            log_of(2, CLIENT, &log),
        ],
        &ctx(),
    );
    let refusal = find(&findings, Kind::Refusal);
    assert_eq!(
        match &refusal.fact {
            crate::detectors::Fact::Refusal(r) => r.state,
            _ => unreachable!("found by kind"),
        },
        RefusedState::Locked
    );
    assert!(refusal.verified, "{refusal:#?}");
    // The same log from a pod not known to be unready stays unverified under such an alert,
    // and so does a new replica's that never restarted (a rollout's brief wait for a peer).
    let findings = detect(&[log_of(2, CLIENT, &log)], &ctx());
    assert!(!find(&findings, Kind::Refusal).verified);
    let waiting = unready.replace("restartCount: 2", "restartCount: 0");
    let findings = detect(
        &[
            crate::detectors::testing::object(1, "Pod", &waiting),
            log_of(2, CLIENT, &log),
        ],
        &ctx(),
    );
    assert!(!find(&findings, Kind::Refusal).verified);
    // Liquibase's own refusal names the holder.
    let held = "ERROR: Could not acquire change log lock.  Currently locked by keycloak-0 (10.244.19.44) since 1/1/25, 8:23 AM";
    assert_eq!(
        refusal_in(&format!("{held}\n{held}\n")).state,
        RefusedState::Locked
    );
}

#[test]
fn a_database_refusing_the_clients_password_is_denied_but_its_own_log_of_it_is_not() {
    for line in [
        r#"{"level":"fatal","msg":"connect to database","error":"failed to connect to `user=catalog database=catalog`: 10.40.12.87:5432 (catalog-pg): failed SASL auth: FATAL: password authentication failed for user \"catalog\" (SQLSTATE 28P01)"}"#,
        "org.postgresql.util.PSQLException: FATAL: password authentication failed for user \"orders\"",
        "java.sql.SQLException: Access denied for user 'app'@'10.244.1.7' (using password: YES)",
        "ERROR redis: WRONGPASS invalid username-password pair or user is disabled.",
    ] {
        assert_eq!(
            refusal_in(&format!("{line}\n{line}\n")).state,
            RefusedState::Denied,
            "{line}"
        );
    }
    // The database's own log of a stranger's failed login refuses nothing this client asked.
    let server = "2025-01-01 00:00:00.123 UTC [4121] FATAL:  password authentication failed for user \"scanner\"\n";
    let findings = detect(
        &[log_of(1, CLIENT, &format!("{server}{server}"))],
        &service_level(),
    );
    assert!(all_of(&findings, Kind::Refusal).is_empty());
}

#[test]
fn a_gateway_status_the_client_hears_names_the_urls_host_and_leads_there() {
    let line = r#"{"level":50,"msg":"OIDC token exchange failed","err":{"message":"expected 200 OK, got: 503 Service Temporarily Unavailable","stack":"OPError: expected 200 OK\n    at processResponse (/app/node_modules/openid-client/lib/helpers/process_response.js:41:11)"},"issuer":"https://auth.acme-corp.net/realms/partners"}"#;
    let refusal = refusal_in(&format!("{line}\n{line}\n"));
    assert_eq!(refusal.state, RefusedState::Unavailable);
    // Not `js:41` out of the stack's file name: the URL's host.
    assert_eq!(refusal.dependency.as_deref(), Some("auth.acme-corp.net"));
    assert_eq!(
        refusal.leads(),
        [Lead::Host {
            host: "auth.acme-corp.net".into(),
            port: None,
            namespace: None,
        }]
    );
    for line in [
        "requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url: https://catalog.shop.example.com/v2/items",
        "unexpected status 502 Bad Gateway from https://api.bank.example.com:8443/v1/payments",
        "upstream answered 504 Gateway Time-out",
    ] {
        assert_eq!(
            refusal_in(&format!("{line}\n{line}\n")).state,
            RefusedState::Unavailable,
            "{line}"
        );
    }
    // A gateway status that says the proxy could not connect is a failing connection, not
    // this.
    let unreachable = "503 Service Unavailable from POST http://inventory.inventory.svc.cluster.local:8080/v1/reservations: upstream connect error or disconnect/reset before headers. reset reason: connection timeout";
    let findings = detect(
        &[log_of(
            1,
            CLIENT,
            &format!("{unreachable}\n{unreachable}\n"),
        )],
        &service_level(),
    );
    assert!(all_of(&findings, Kind::Refusal).is_empty());
    // A service's own log of the status it answered is no answer it heard, with or without
    // the reason phrase (uvicorn, Rails).
    for own in [
        "10.0.0.1 - - \"POST /login HTTP/1.1\" 503 190",
        "INFO:     10.244.0.1:40312 - \"GET /ready HTTP/1.1\" 503 Service Unavailable",
        "Completed 503 Service Unavailable in 3ms (ActiveRecord: 0.0ms)",
        "INFO:     10.244.0.1:40318 - \"GET /admin HTTP/1.1\" 401 Unauthorized",
    ] {
        let findings = detect(
            &[log_of(1, CLIENT, &format!("{own}\n{own}\n"))],
            &service_level(),
        );
        assert!(all_of(&findings, Kind::Refusal).is_empty(), "{own}");
    }
}
