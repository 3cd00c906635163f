//! Metrics (exact and lenient series matching, range and instant queries), log streams
//! (LogQL selectors and line filters; node journals) and traces (TraceQL filters, spans).

use chrono::{Duration, TimeZone, Utc};
use serde_json::{Value, json};

use super::{args, parse};
use crate::render::*;
use crate::scenario::Scenario;

const WORLD: &str = r#"
alert: {text: "x", at: "2025-03-01T12:00:00Z"}
metrics:
  - query: 'sum(rate(http_errors_total{service="cart"}[5m]))'
    labels: {service: cart}
    constant: 0.5
  - metric: hikaricp_connections_active
    labels: {service: cart, pod: cart-a}
    points: [[-30m, 3], [-10m, 10]]
  - metric: hikaricp_connections_active
    labels: {service: cart, pod: cart-b}
    constant: 4
  - metric: hikaricp_connections_active
    labels: {service: web, pod: web-a}
    constant: 1
log_streams:
  - labels: {namespace: shop, app: cart, container: api}
    lines:
      - {at: -9m, line: "ERROR HikariPool-1 - Connection is not available"}
      - {at: -5m, line: "INFO GET /cart 200"}
      - {at: -1m, line: "error: connection refused to db"}
  - labels: {namespace: shop, app: web}
    lines:
      - {at: -3m, line: "ERROR upstream cart timed out"}
  - query: '{app="legacy"}'
    lines:
      - {at: -2m, line: "written for one query"}
traces:
  - service: frontend
    trace_id: t-slow
    root_name: GET /cart
    start: -5m
    duration_ms: 1800
    spans:
      - {name: GET /cart, duration_ms: 1800}
      - {name: SELECT carts, service: cart-db, duration_ms: 1700, status: error, parent: GET /cart}
      - {name: render, duration_ms: 50, parent: GET /cart}
  - {service: frontend, trace_id: t-fast, root_name: GET /, start: -2m, duration_ms: 40}
  - {service: checkout, trace_id: t-other, root_name: POST /pay, start: -1m, duration_ms: 300}
expect: {verdict: post}
"#;

fn world() -> Scenario {
    parse(WORLD)
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn range(s: &Scenario, query: &str) -> Value {
    json_of(
        &execute_range_query(
            s,
            &args(json!({"query": query, "start": "2025-03-01T11:30:00Z", "end": "2025-03-01T12:00:00Z", "step": "5m"})),
        )
        .unwrap(),
    )
}

fn pods_of(result: &Value) -> Vec<&str> {
    result["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"]["pod"].as_str().unwrap_or("-"))
        .collect()
}

#[test]
fn an_exact_query_wins_and_keeps_its_labels() {
    let s = world();
    let exact = range(&s, r#"sum(rate(http_errors_total{service="cart"}[5m]))"#);
    assert_eq!(exact["result"][0]["metric"], json!({"service": "cart"}));
    // The same series, selected leniently, comes back raw with its name.
    let lenient = range(&s, r#"http_errors_total{service="cart", code=~"5.."}"#);
    assert_eq!(
        lenient["result"][0]["metric"],
        json!({"__name__": "http_errors_total", "service": "cart"})
    );
    assert_eq!(
        range(&s, r#"http_errors_total{service="web"}"#)["result"],
        json!([])
    );
}

#[test]
fn lenient_matching_returns_every_selected_series() {
    let s = world();
    let all_cart = range(
        &s,
        r#"max by (pod) (hikaricp_connections_active{service="cart", namespace="shop"})"#,
    );
    assert_eq!(pods_of(&all_cart), ["cart-a", "cart-b"]);
    let regex = range(&s, r#"hikaricp_connections_active{pod=~"cart-a|web-a"}"#);
    assert_eq!(pods_of(&regex), ["cart-a", "web-a"]);
    let values = &all_cart["result"][0]["values"];
    assert_eq!(values[0], json!([1740828600, "3"]), "11:30 holds -30m's 3");
    assert_eq!(values[4][1], "10", "11:50 holds -10m's 10");
    assert_eq!(range(&s, "up")["result"], json!([]));
}

#[test]
fn an_instant_query_answers_the_last_point_at_or_before_its_time() {
    let s = world();
    let at = |time: &str| {
        json_of(
            &execute_query(
                &s,
                &args(
                    json!({"query": r#"hikaricp_connections_active{pod="cart-a"}"#, "time": time}),
                ),
            )
            .unwrap(),
        )
    };
    let before = at("2025-03-01T11:45:00Z");
    assert_eq!(before["resultType"], "vector");
    let t = Utc
        .with_ymd_and_hms(2025, 3, 1, 11, 45, 0)
        .unwrap()
        .timestamp();
    assert_eq!(before["result"][0]["value"], json!([t, "3"]));
    assert_eq!(at("2025-03-01T11:50:00Z")["result"][0]["value"][1], "10");
    assert_eq!(
        at("2025-03-01T11:00:00Z")["result"],
        json!([]),
        "before the first point"
    );
    let now = json_of(
        &execute_query(&s, &args(json!({"query": "hikaricp_connections_active"}))).unwrap(),
    );
    assert_eq!(now["result"].as_array().map(Vec::len), Some(3));
}

fn logs(s: &Scenario, logql: &str, extra: Value) -> Vec<String> {
    let mut a = json!({"datasourceUid": "loki", "logql": logql, "startRfc3339": "2025-03-01T11:00:00Z", "endRfc3339": "2025-03-01T12:00:00Z"});
    a.as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap());
    json_of(&query_loki_logs(s, &args(a)).unwrap())
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["line"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn log_streams_answer_selectors_and_line_filters_newest_first() {
    let s = world();
    let shop = logs(&s, r#"{namespace="shop"} |~ "(?i)error""#, json!({}));
    assert_eq!(
        shop,
        [
            "error: connection refused to db",
            "ERROR upstream cart timed out",
            "ERROR HikariPool-1 - Connection is not available"
        ]
    );
    let cart = logs(
        &s,
        r#"{app=~"ca.+", container="api"} != "INFO" |= "(?i)connection""#,
        json!({}),
    );
    assert_eq!(cart.len(), 2);
    let oldest = logs(
        &s,
        r#"{namespace="shop"}"#,
        json!({"direction": "forward", "limit": 1}),
    );
    assert_eq!(oldest, ["ERROR HikariPool-1 - Connection is not available"]);
    let windowed = logs(
        &s,
        r#"{app="cart"}"#,
        json!({"startRfc3339": "2025-03-01T11:58:00Z"}),
    );
    assert_eq!(windowed, ["error: connection refused to db"]);
    assert_eq!(
        logs(&s, r#"{ app = "legacy" }"#, json!({})),
        ["written for one query"]
    );
    assert!(logs(&s, r#"{app="nothing"}"#, json!({})).is_empty());
}

fn traces(s: &Scenario, query: &str, extra: Value) -> Value {
    let mut a = json!({"datasourceUid": "tempo", "query": query});
    a.as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap());
    json_of(&search_tempo_traces(s, &args(a)).unwrap())["traces"].clone()
}

fn ids(traces: &Value) -> Vec<&str> {
    traces
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["traceID"].as_str())
        .collect()
}

#[test]
fn traceql_filters_traces_and_spans_come_slowest_first() {
    let s = world();
    let frontend = traces(&s, r#"{ resource.service.name = "frontend" }"#, json!({}));
    assert_eq!(ids(&frontend), ["t-fast", "t-slow"], "newest first");
    let slow = traces(
        &s,
        r#"{ resource.service.name = "frontend" && duration > 500ms }"#,
        json!({}),
    );
    assert_eq!(ids(&slow), ["t-slow"]);
    let failing = traces(&s, "{ status = error }", json!({}));
    assert_eq!(ids(&failing), ["t-slow"]);
    let trace = &failing[0];
    assert_eq!(trace["status"], "error");
    assert_eq!(trace["rootServiceName"], "frontend");
    let spans: Vec<&str> = trace["spanSet"]["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(spans, ["GET /cart", "SELECT carts", "render"]);
    assert_eq!(trace["spanSet"]["spans"][1]["serviceName"], "cart-db");
    assert_eq!(
        trace["spanSet"]["spans"][1]["parentSpanID"],
        trace["spanSet"]["spans"][0]["spanID"]
    );
    assert_eq!(ids(&traces(&s, "{}", json!({"limit": 1}))), ["t-other"]);
    let end = (s.alert_at - Duration::minutes(3)).to_rfc3339();
    assert_eq!(ids(&traces(&s, "{}", json!({"end": end}))), ["t-slow"]);
}

#[test]
fn node_journals_are_loki_streams_by_node_and_unit() {
    let s = parse(
        r#"
alert: {text: "x", at: "2025-03-01T12:00:00Z"}
nodes:
  - name: worker-3
    journal:
      - {at: -6m, line: "E0301 kubelet.go:2412] \"Skipping pod synchronization\" err=\"PLEG is not healthy\""}
      - {at: -4m, unit: containerd, line: "level=error msg=\"shim disconnected\" id=4f1c"}
      - {at: -2m, line: "E0301 kubelet.go:2855] \"Container runtime not ready\""}
  - {name: worker-4, journal: [{at: -1m, line: "I0301 kubelet.go:100] ok"}]}
log_streams:
  - labels: {namespace: shop, app: cart, node: worker-3}
    lines: [{at: -3m, line: "error from the app"}]
expect: {verdict: post}
"#,
    );
    let all = logs(&s, r#"{node="worker-3"}"#, json!({}));
    assert_eq!(
        all,
        [
            "E0301 kubelet.go:2855] \"Container runtime not ready\"",
            "error from the app",
            "level=error msg=\"shim disconnected\" id=4f1c",
            "E0301 kubelet.go:2412] \"Skipping pod synchronization\" err=\"PLEG is not healthy\"",
        ],
        "journal lines merge with the node's other streams, newest first"
    );
    let journal = logs(&s, r#"{job="systemd-journal", node="worker-3"}"#, json!({}));
    assert_eq!(journal.len(), 3);
    let kubelet = logs(
        &s,
        r#"{job="systemd-journal", node="worker-3", unit="kubelet"} |= "PLEG""#,
        json!({}),
    );
    assert_eq!(kubelet.len(), 1);
    let containerd = logs(&s, r#"{unit="containerd"}"#, json!({}));
    assert_eq!(
        containerd,
        ["level=error msg=\"shim disconnected\" id=4f1c"]
    );
    let every_node = logs(&s, r#"{job="systemd-journal", unit="kubelet"}"#, json!({}));
    assert_eq!(every_node.len(), 3, "worker-3's two and worker-4's one");

    let raw = json_of(
        &query_loki_logs(
            &s,
            &args(json!({"datasourceUid": "loki", "logql": r#"{node="worker-4"}"#})),
        )
        .unwrap(),
    );
    assert_eq!(
        raw[0]["labels"],
        json!({"job": "systemd-journal", "node": "worker-4", "unit": "kubelet"})
    );
}
