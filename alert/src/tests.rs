use super::holmes::from_investigate_request;
use super::*;

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

const ALERTMANAGER: &str = "\
[FIRING:1] KubePodCrashLooping (default/payments-api-7d9f8c6b5-x2k4q)
*Alert:* Pod is crash looping. - `critical`
*Description:* Pod default/payments-api-7d9f8c6b5-x2k4q (api) is in waiting state (reason: \"CrashLoopBackOff\").
*Graph:* <http://prometheus:9090/graph?g0.expr=max_over_time%28kube_pod_container_status_waiting_reason%7Breason%3D%22CrashLoopBackOff%22%2Cjob%3D%22kube-state-metrics%22%7D%5B5m%5D%29+%3E%3D+1&g0.tab=1|:chart_with_upwards_trend:>
*Runbook:* <https://runbooks.prometheus-operator.dev/runbooks/kubernetes/kubepodcrashlooping|:spiral_note_pad:>
*Details:*
  • *alertname:* `KubePodCrashLooping`
  • *cluster:* `prod-eu-1`
  • *container:* `api`
  • *endpoint:* `http`
  • *instance:* `10.0.3.17:8080`
  • *job:* `kube-state-metrics`
  • *namespace:* `default`
  • *pod:* `payments-api-7d9f8c6b5-x2k4q`
  • *service:* `prometheus-kube-state-metrics`
  • *severity:* `critical`
  • *startsAt:* `2025-03-04T14:02:11.52Z`
";

#[test]
fn parses_alertmanager_slack_template() {
    let t = parse_alert(ALERTMANAGER);
    assert_eq!(t.alertname.as_deref(), Some("KubePodCrashLooping"));
    assert_eq!(t.status, Some(AlertStatus::Firing));
    assert_eq!(t.severity.as_deref(), Some("critical"));
    assert_eq!(t.cluster.as_deref(), Some("prod-eu-1"));
    assert_eq!(t.namespace.as_deref(), Some("default"));
    assert_eq!(t.pod.as_deref(), Some("payments-api-7d9f8c6b5-x2k4q"));
    assert_eq!(t.container.as_deref(), Some("api"));
    assert_eq!(t.workload.as_deref(), Some("payments-api"));
    assert_eq!(t.workload_kind.as_deref(), Some("Deployment"));
    assert!(t.workload_derived);
    assert!(t.notes.iter().any(|n| n.contains("derived from pod name")));
    assert_eq!(t.job.as_deref(), Some("kube-state-metrics"));
    assert_eq!(t.instance.as_deref(), Some("10.0.3.17:8080"));
    assert_eq!(t.service, None, "the exporter's service is not the target");
    assert_eq!(t.summary.as_deref(), Some("Pod is crash looping."));
    assert!(
        t.description
            .as_deref()
            .unwrap()
            .contains("CrashLoopBackOff")
    );
    assert_eq!(
        t.expression.as_deref(),
        Some(
            "max_over_time(kube_pod_container_status_waiting_reason{reason=\"CrashLoopBackOff\",job=\"kube-state-metrics\"}[5m]) >= 1"
        )
    );
    assert!(
        t.source_url
            .as_deref()
            .unwrap()
            .starts_with("http://prometheus:9090/graph?")
    );
    assert_eq!(t.starts_at, Some(utc("2025-03-04T14:02:11.52Z")));
    assert!(t.unknown.is_empty(), "unknown: {:?}", t.unknown);
}

const GRAFANA: &str = "\
[FIRING:1] HighErrorRate payments (checkout)
**Firing**

Value: A=0.12, B=1
Labels:
 - alertname = HighErrorRate
 - grafana_folder = Payments
 - namespace = payments
 - service = checkout
 - severity = warning
Annotations:
 - description = 5xx ratio above 5% for 5 minutes
 - summary = Checkout error rate is high
Source: http://grafana.internal:3000/alerting/grafana/ddk3x0/view?orgId=1
Silence: http://grafana.internal:3000/alerting/silence/new?alertmanager=grafana&matcher=alertname%3DHighErrorRate
Dashboard: http://grafana.internal:3000/d/abc?orgId=1
";

#[test]
fn parses_grafana_default_message() {
    let t = parse_alert(GRAFANA);
    assert_eq!(t.alertname.as_deref(), Some("HighErrorRate"));
    assert_eq!(t.status, Some(AlertStatus::Firing));
    assert_eq!(t.severity.as_deref(), Some("warning"));
    assert_eq!(t.namespace.as_deref(), Some("payments"));
    assert_eq!(t.service.as_deref(), Some("checkout"));
    assert_eq!(t.summary.as_deref(), Some("Checkout error rate is high"));
    assert_eq!(
        t.description.as_deref(),
        Some("5xx ratio above 5% for 5 minutes")
    );
    assert_eq!(t.observed_value.as_deref(), Some("A=0.12, B=1"));
    assert_eq!(
        t.source_url.as_deref(),
        Some("http://grafana.internal:3000/alerting/grafana/ddk3x0/view?orgId=1")
    );
    assert_eq!(
        t.labels.get("grafana_folder").map(String::as_str),
        Some("Payments")
    );
    assert!(
        !t.labels.contains_key("orgid"),
        "URL query must not become labels"
    );
    assert!(t.unknown.contains(&AlertField::StartsAt));
    assert!(t.unknown.contains(&AlertField::Expression));
    assert!(!t.unknown.contains(&AlertField::Target));
}

#[test]
fn parses_grafana_resolved() {
    let t = parse_alert("**Resolved**\nLabels:\n - alertname = DiskFull\n");
    assert_eq!(t.status, Some(AlertStatus::Resolved));
    assert_eq!(t.alertname.as_deref(), Some("DiskFull"));
}

#[test]
fn parses_prometheus_label_set() {
    let t = parse_alert(
        r#"ALERT {alertname="HighLatency", namespace="shop", deployment="cart", severity="page"} since 2025-03-04T14:00:00Z"#,
    );
    assert_eq!(t.alertname.as_deref(), Some("HighLatency"));
    assert_eq!(t.namespace.as_deref(), Some("shop"));
    assert_eq!(t.workload.as_deref(), Some("cart"));
    assert_eq!(t.workload_kind.as_deref(), Some("Deployment"));
    assert!(!t.workload_derived);
    assert_eq!(t.severity.as_deref(), Some("page"));
}

#[test]
fn promql_selector_is_not_taken_for_labels() {
    let t = parse_alert(
        "alertname=ErrorBudgetBurn\nexpr: sum(rate(http_requests_total{code=~\"5..\", job=\"api\"}[5m])) > 1\n",
    );
    assert_eq!(t.alertname.as_deref(), Some("ErrorBudgetBurn"));
    assert_eq!(
        t.expression.as_deref(),
        Some("sum(rate(http_requests_total{code=~\"5..\", job=\"api\"}[5m])) > 1")
    );
    assert!(!t.labels.contains_key("code"));
    assert_eq!(t.job, None);
}

#[test]
fn parses_generic_key_value_text() {
    let text = "\
Alert: PodNotReady
status: firing
severity=warning namespace=orders pod=orders-worker-5c7b9d8f6-qwz2x container=worker
node: ip-10-0-1-12.ec2.internal
Started at: 2025-03-04 14:02:00 +0000 UTC
summary: orders worker not ready
";
    let t = parse_alert(text);
    assert_eq!(t.alertname.as_deref(), Some("PodNotReady"));
    assert_eq!(t.status, Some(AlertStatus::Firing));
    assert_eq!(t.severity.as_deref(), Some("warning"));
    assert_eq!(t.namespace.as_deref(), Some("orders"));
    assert_eq!(t.pod.as_deref(), Some("orders-worker-5c7b9d8f6-qwz2x"));
    assert_eq!(t.container.as_deref(), Some("worker"));
    assert_eq!(t.workload.as_deref(), Some("orders-worker"));
    assert_eq!(t.node.as_deref(), Some("ip-10-0-1-12.ec2.internal"));
    assert_eq!(t.starts_at, Some(utc("2025-03-04T14:02:00Z")));
    assert_eq!(t.summary.as_deref(), Some("orders worker not ready"));
}

#[test]
fn a_webhooks_free_text_is_its_description_without_its_label_lines() {
    let text = "\
ALERT search-indexer-bulk-failures FIRING
service=search-indexer namespace=search severity=critical
100% of bulk index requests failed in the last 10 minutes (2,411 batches).
Runbook: https://runbooks.example.com/search-indexer
since: 2025-03-04T14:02:00Z
";
    let t = parse_alert(text);
    assert_eq!(
        t.description.as_deref(),
        Some("100% of bulk index requests failed in the last 10 minutes (2,411 batches).")
    );
    // A summary field the message states is not overridden by its prose.
    let t = parse_alert(&format!("{text}summary: indexer failing\n"));
    assert_eq!(t.summary.as_deref(), Some("indexer failing"));
    assert_eq!(t.description, None);
}

#[test]
fn flattened_attachment_fields_are_read() {
    // A caller flattens attachment title/text/fields into "Title: value" lines.
    let text = "\
[RESOLVED] TargetDown
Namespace: monitoring
Service: node-exporter
Expression: up{job=\"node-exporter\"} == 0
";
    let t = parse_alert(text);
    assert_eq!(t.status, Some(AlertStatus::Resolved));
    assert_eq!(t.alertname.as_deref(), Some("TargetDown"));
    assert_eq!(t.namespace.as_deref(), Some("monitoring"));
    assert_eq!(t.service.as_deref(), Some("node-exporter"));
    assert_eq!(
        t.expression.as_deref(),
        Some("up{job=\"node-exporter\"} == 0")
    );
}

#[test]
fn unparseable_text_yields_unknowns_not_an_error() {
    let t = parse_alert("something is wrong with the website, please look!!");
    assert_eq!(t.alertname, None);
    for field in [
        AlertField::Alertname,
        AlertField::Status,
        AlertField::Namespace,
        AlertField::Target,
        AlertField::StartsAt,
    ] {
        assert!(t.unknown.contains(&field), "{field} should be unknown");
    }
    assert!(parse_alert("").unknown.len() >= 5);
}

#[test]
fn partial_alert_keeps_what_it_found() {
    let t = parse_alert("[FIRING:3] KubeDeploymentReplicasMismatch\nnamespace=checkout");
    assert_eq!(
        t.alertname.as_deref(),
        Some("KubeDeploymentReplicasMismatch")
    );
    assert_eq!(t.namespace.as_deref(), Some("checkout"));
    assert!(t.unknown.contains(&AlertField::Target));
    assert!(!t.unknown.contains(&AlertField::Namespace));
}

#[test]
fn slack_escaped_generator_url_is_decoded() {
    let t = parse_alert(
        "[FIRING:1] HighErrorRate\n<http://prom/graph?g0.expr=rate%28errors_total%5B5m%5D%29+%3E+0.1&amp;g0.tab=1|Graph>",
    );
    assert_eq!(
        t.expression.as_deref(),
        Some("rate(errors_total[5m]) > 0.1")
    );
}

#[test]
fn replicaset_label_derives_deployment() {
    let t = parse_alert("alertname=X replicaset=cart-6d5f8b9c7d namespace=a");
    assert_eq!(t.workload.as_deref(), Some("cart"));
    assert!(t.workload_derived);
}

fn holmes_request(case: &str) -> String {
    let path = format!(
        "{}/../third_party/peer/holmesgpt/{case}/investigate_request.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

#[test]
fn holmes_request_with_pod_name_under_deployment_type() {
    let t = from_investigate_request(&holmes_request("01_oom_kill")).unwrap();
    assert_eq!(
        t.pod.as_deref(),
        Some("analytics-exporter-fast-76897854c-cw5wh")
    );
    assert_eq!(t.workload.as_deref(), Some("analytics-exporter-fast"));
    assert!(t.workload_derived);
    assert_eq!(t.namespace.as_deref(), Some("default"));
    assert_eq!(t.container.as_deref(), Some("memory-eater"));
    assert_eq!(t.node.as_deref(), Some("grafana-cloud-control-plane"));
    assert_eq!(t.summary.as_deref(), Some("Pod is crash looping."));
    assert_eq!(t.alertname, None, "a sentence is not an alert name");
}

#[test]
fn holmes_requests_of_every_case() {
    let t = from_investigate_request(&holmes_request("02_crashloop_backoff")).unwrap();
    assert_eq!(t.pod.as_deref(), Some("logging-agent"));
    assert_eq!(t.alertname.as_deref(), Some("CrashLoopBackoff"));
    assert_eq!(t.workload, None);

    let t = from_investigate_request(&holmes_request("04_image_pull_backoff")).unwrap();
    assert_eq!(
        t.pod.as_deref(),
        Some("customer-relations-webapp-5d98ffcfd-tz4nc")
    );
    assert_eq!(t.alertname.as_deref(), Some("KubernetesWarningEvent"));
    assert_eq!(t.node, None);

    let t = from_investigate_request(&holmes_request("05_crashpod")).unwrap();
    assert_eq!(t.alertname.as_deref(), Some("KubePodCrashLooping"));
    assert_eq!(t.workload.as_deref(), Some("db-certs-authenticator"));

    let t = from_investigate_request(&holmes_request("06_job_failure")).unwrap();
    assert_eq!(t.workload.as_deref(), Some("java-api-checker"));
    assert_eq!(t.workload_kind.as_deref(), Some("Job"));
    assert_eq!(t.pod, None);
}

#[test]
fn holmes_request_rejects_malformed_json_only() {
    assert!(from_investigate_request("{not json").is_err());
    let t = from_investigate_request("{}").unwrap();
    assert!(t.unknown.contains(&AlertField::Target));
}

#[test]
fn recovery_and_firing_are_told_apart_for_common_integrations() {
    for text in [
        "[RESOLVED] KubePodCrashLooping checkout",
        "*[RESOLVED]* KubePodCrashLooping",
        ":white_check_mark: [RESOLVED] HighLatency",
        "✅ [OK] High CPU alert",
        "[Resolved] DiskFull",
        "Resolved: #1234 High CPU on checkout",
        "Recovered: [P1] High CPU on web-1",
        "Alert summary\nstatus: resolved\nalertname: X",
        "**Resolved**\n\nValue: A=0\nLabels:\n - alertname = HighCPU\n",
        "[OK] High CPU\nstate: alerting",
    ] {
        assert!(parse_alert(text).is_recovery(), "{text}");
    }
    for text in [
        "[FIRING:1] KubePodCrashLooping checkout",
        "[FIRING:1] ResolvedConnectionsHigh",
        "ResolvedConnectionsHigh is firing",
        "Triggered: [P1] High CPU on web-1",
        "[Alerting] High CPU alert",
        "Warning: disk full on db-1",
        "",
    ] {
        assert!(!parse_alert(text).is_recovery(), "{text}");
    }
    // The title's status wins over a line further down.
    assert!(!parse_alert("[FIRING:1] X\ndescription: state: ok").is_recovery());
}

#[test]
fn the_identifying_labels_come_from_label_lines_then_the_title() {
    let am = "[FIRING:1] KubePodCrashLooping checkout\nLabels:\n - alertname = KubePodCrashLooping\n - namespace = shop\n - service: checkout-api\n";
    let t = parse_alert(am);
    assert_eq!(t.alertname.as_deref(), Some("KubePodCrashLooping"));
    assert_eq!(t.namespace.as_deref(), Some("shop"));
    assert_eq!(t.service.as_deref(), Some("checkout-api"));
    let braces = parse_alert(r#"Alert {alertname="HighLatency", namespace="payments"}"#);
    assert_eq!(braces.alertname.as_deref(), Some("HighLatency"));
    assert_eq!(braces.namespace.as_deref(), Some("payments"));
    assert_eq!(braces.service, None);
    for (text, name) in [
        (
            "*[RESOLVED]* KubePodCrashLooping checkout (shop)",
            Some("KubePodCrashLooping"),
        ),
        (
            "Recovered: [P1] High CPU on web-1",
            Some("High CPU on web-1"),
        ),
        (
            "Triggered: [P1] High CPU on web-1",
            Some("High CPU on web-1"),
        ),
        ("[Alerting] High CPU alert", Some("High CPU alert")),
        ("checkout is slow, anyone?", None),
    ] {
        assert_eq!(parse_alert(text).identity(), name, "{text}");
    }
    // A rule's human name identifies the alert; it is not an `alertname` label.
    assert_eq!(parse_alert("[Alerting] High CPU alert").alertname, None);
    let triggered = parse_alert("Triggered: [P1] High CPU on web-1");
    assert!(triggered.same_alert(&parse_alert("Recovered: [P1] high cpu on web-1")));
}

#[test]
fn a_recovery_is_about_the_alert_with_the_same_name_and_agreeing_scope() {
    let target = |name: &str, namespace: Option<&str>| AlertTarget {
        alertname: Some(name.into()),
        namespace: namespace.map(str::to_string),
        ..AlertTarget::default()
    };
    let shop = target("KubePodCrashLooping", Some("shop"));
    assert!(shop.same_alert(&target("kubepodcrashlooping", Some("shop"))));
    assert!(target("KubePodCrashLooping", None).same_alert(&shop));
    assert!(!shop.same_alert(&target("KubePodCrashLooping", Some("web"))));
    assert!(!target("HighLatency", None).same_alert(&target("KubePodCrashLooping", None)));
    assert!(!AlertTarget::default().same_alert(&AlertTarget::default()));
}

#[test]
fn label_bullets_outside_a_section_are_labels_and_prose_bullets_are_not() {
    let t =
        parse_alert("[FIRING:1] KubeJobFailed\n - namespace = batch\n - job_name = nightly-export");
    assert_eq!(t.namespace.as_deref(), Some("batch"));
    assert_eq!(t.workload.as_deref(), Some("nightly-export"));
    // `key = value` with a key that is not a label name stays prose.
    let prose = parse_alert("[FIRING:1] X\n - retry count = 3 after the deploy");
    assert!(
        prose.labels.keys().all(|k| !k.contains(' ')),
        "{:?}",
        prose.labels
    );
}

#[test]
fn an_alert_only_in_attachments_parses_like_text() {
    let message = serde_json::json!({"text": "", "attachments": [{
        "fallback": "[RESOLVED] X", "title": "[RESOLVED] KubePodCrashLooping checkout",
        "text": "namespace: shop", "fields": [{"title": "service", "value": "checkout"}]}]});
    let t = parse_alert(&attachments::message_text("", &message));
    assert!(t.is_recovery());
    assert_eq!(t.alertname.as_deref(), Some("KubePodCrashLooping"));
    assert_eq!(t.namespace.as_deref(), Some("shop"));
    assert_eq!(t.service.as_deref(), Some("checkout"));
}

#[test]
fn an_exporters_container_label_is_not_the_targets_container() {
    let t = parse_alert(
        "[FIRING:1] KubeJobNotCompleted\n• *namespace:* `geo`\n• *job_name:* `tile-rollup-1`\n• *container:* `kube-state-metrics`\n• *job:* `kube-state-metrics`",
    );
    assert_eq!(t.container, None);
    assert!(
        t.notes.iter().any(|n| n.contains("`container` label")),
        "{:?}",
        t.notes
    );
}

#[test]
fn a_trigger_line_carries_the_expression_and_its_labels() {
    let t = parse_alert(
        "PROBLEM: PostgreSQL replication lag on ledger-pg-1 is 1.31 GB (> 512 MB)\nHost: ledger-pg-1 (namespace accounting, cluster prod-eu-1) | Severity: High\nTrigger: pg_replication_lag_bytes{pod=\"ledger-pg-1\"} > 536870912 for 5m",
    );
    assert_eq!(
        t.expression.as_deref(),
        Some("pg_replication_lag_bytes{pod=\"ledger-pg-1\"} > 536870912")
    );
    assert_eq!(t.pod.as_deref(), Some("ledger-pg-1"));
    assert_eq!(t.namespace.as_deref(), Some("accounting"));
}

#[test]
fn a_datadog_monitor_names_its_service_and_namespace_in_tags() {
    let t = parse_alert(
        "[Triggered] fx-quote-api p99 latency above 2s\np99 latency of service:fx-quote-api (env:prod, kube_namespace:treasury, kube_cluster:prod-eu-1) was 2.84s over the last 10m (threshold 2s, warn 1s).\nMonitor #88121204 - triggered at 2025-01-01T00:00:00Z - notify @slack-treasury-oncall",
    );
    assert_eq!(t.namespace.as_deref(), Some("treasury"), "{t:#?}");
    assert_eq!(t.service.as_deref(), Some("fx-quote-api"));
}

#[test]
fn label_names_keep_their_case_and_known_keys_are_read_in_any_case() {
    let t = parse_alert(
        "[FIRING:1] SQSOldestMessageAgeHigh\n*Details:*\n  • *dimension_QueueName:* `order-events`\n  • *Namespace:* `fulfilment`\n  • *severity:* `warning`",
    );
    assert_eq!(
        t.labels.get("dimension_QueueName").map(String::as_str),
        Some("order-events")
    );
    assert_eq!(t.namespace.as_deref(), Some("fulfilment"));
    assert_eq!(t.severity.as_deref(), Some("warning"));
}

#[test]
fn a_hostname_that_is_a_services_cluster_name_is_that_service_not_a_node() {
    let t = parse_alert(
        "[FIRING:1] ClickHouseReadonlyReplica\n*Details:*\n  • *alertname:* `ClickHouseReadonlyReplica`\n  • *hostname:* `chi-events-main-0-0.clickhouse.svc.cluster.local`\n  • *severity:* `high`",
    );
    assert_eq!(t.node, None, "{t:#?}");
    assert_eq!(t.service.as_deref(), Some("chi-events-main-0-0"));
    assert_eq!(t.namespace.as_deref(), Some("clickhouse"));
    // A node's own name stays a node.
    let t = parse_alert(
        "[FIRING:1] NodeFilesystemAlmostFull\n*Details:*\n  • *hostname:* `ip-10-0-1-2.eu-west-1.compute.internal`",
    );
    assert_eq!(
        t.node.as_deref(),
        Some("ip-10-0-1-2.eu-west-1.compute.internal")
    );
}

#[test]
fn several_key_value_fields_on_one_line_are_each_read() {
    let t = parse_alert(
        ":red_circle: PAYOUTS DEGRADED (prod-eu-1)\n31 of 33 payout submissions failed in the last 15 minutes.\nworker: payouts-worker · namespace: payments · partner: nordlys-bank\nteam: payments | tier: 1",
    );
    assert_eq!(t.namespace.as_deref(), Some("payments"), "{t:#?}");
    assert_eq!(
        t.labels.get("worker").map(String::as_str),
        Some("payouts-worker")
    );
    assert_eq!(
        t.labels.get("partner").map(String::as_str),
        Some("nordlys-bank")
    );
    assert_eq!(t.labels.get("tier").map(String::as_str), Some("1"));
}
