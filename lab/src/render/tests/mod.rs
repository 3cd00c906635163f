//! The rendered world checked against what the real servers answer: one crash-looping pod here
//! (the shapes every scenario relied on before the format grew), the newer kinds in `kinds`,
//! metrics, logs and traces in `telemetry`, pod IPs and the networking, policy and attachment
//! kinds in `cluster`.

mod cluster;
mod kinds;
mod telemetry;

use std::path::Path;

use chrono::{Duration, TimeZone, Utc};
use serde_json::{Map, Value, json};

use super::*;
use crate::scenario::Scenario;

const WORLD: &str = r#"
alert: {text: "x", at: "2025-03-01T12:00:00Z"}
pods:
  - name: api-7c9-x2x7q
    namespace: payments
    node: worker-2
    deployment: api
    containers:
      - name: api
        image: registry/api:1.8.3
        ready: false
        restartCount: 7
        state: {waiting: {reason: CrashLoopBackOff, message: "back-off 5m0s restarting failed container=api"}}
        lastState: {terminated: {exitCode: 78, finishedAt: -1m}}
        resources: {limits: {memory: 256Mi}}
deployments:
  - name: api
    namespace: payments
    replicas: 2
    revisions:
      - {image: "registry/api:1.8.2", created: -3d}
      - {image: "registry/api:1.8.3", created: -20m, change_cause: "deploy 1.8.3"}
events:
  - {type: Warning, reason: BackOff, message: "Back-off restarting failed container api", involvedObject: {kind: Pod, name: api-7c9-x2x7q, namespace: payments}, at: -1m}
  - {reason: Pulled, message: "Pulled image", involvedObject: {kind: Pod, name: other, namespace: payments}, at: -5m}
logs:
  - pod: api-7c9-x2x7q
    previous: "boot\nFATAL: required setting PAYMENT_MODE is not set\n"
metrics:
  - query: 'sum(rate(x[5m]))'
    labels: {service: api}
    step: {before: 0.01, after: 0.35, at: -12m}
expect: {verdict: post}
"#;

fn scenario() -> Scenario {
    parse(WORLD)
}

/// A scenario from YAML, with the alert where the text puts it.
fn parse(text: &str) -> Scenario {
    Scenario::parse("t", Path::new("t"), text, Utc::now()).unwrap()
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

/// A YAML answer, parsed.
fn yaml(text: &str) -> Value {
    serde_norway::from_str(text).unwrap()
}

/// Object `kind` `namespace/name` as `resources_get` answers it.
fn get(s: &Scenario, api_version: &str, kind: &str, namespace: &str, name: &str) -> Value {
    let text = resources_get(
        s,
        &args(
            json!({"apiVersion": api_version, "kind": kind, "namespace": namespace, "name": name}),
        ),
    )
    .unwrap_or_else(|e| panic!("{kind} {name}: {e}"));
    yaml(&text)
}

/// The names of a list's objects.
fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect()
}

#[test]
fn pod_yaml_has_sorted_kubernetes_fields() {
    let text = pods_get(
        &scenario(),
        &args(json!({"namespace": "payments", "name": "api-7c9-x2x7q"})),
    )
    .unwrap();
    for needle in [
        "exitCode: 78",
        "reason: CrashLoopBackOff",
        "restartCount: 7",
        "memory: 256Mi",
        "kind: ReplicaSet",
        "nodeName: worker-2",
        "reason: Error",
    ] {
        assert!(text.contains(needle), "{needle} missing in\n{text}");
    }
    assert!(text.find("apiVersion").unwrap() < text.find("kind: Pod").unwrap());
    let error = pods_get(
        &scenario(),
        &args(json!({"namespace": "payments", "name": "nope"})),
    )
    .unwrap_err();
    assert!(error.contains("pods \"nope\" not found"), "{error}");
}

#[test]
fn pods_list_in_namespace_filters_by_label_selector() {
    let s = scenario();
    let all = pods_list_in_namespace(&s, &args(json!({"namespace": "payments"}))).unwrap();
    assert!(all.contains("name: api-7c9-x2x7q"), "{all}");
    let api = pods_list_in_namespace(
        &s,
        &args(json!({"namespace": "payments", "labelSelector": "app=api"})),
    )
    .unwrap();
    assert!(api.contains("name: api-7c9-x2x7q"), "{api}");
    let none = pods_list_in_namespace(
        &s,
        &args(json!({"namespace": "payments", "labelSelector": "job-name=nope"})),
    )
    .unwrap();
    assert!(!none.contains("api-7c9-x2x7q"), "{none}");
    assert!(pods_list_in_namespace(&s, &args(json!({}))).is_err());
}

#[test]
fn previous_log_and_missing_logs() {
    let s = scenario();
    let prev = pods_log(
        &s,
        &args(json!({"namespace": "payments", "name": "api-7c9-x2x7q", "previous": true})),
    )
    .unwrap();
    assert!(prev.contains("FATAL: required setting PAYMENT_MODE is not set"));
    let tail = pods_log(
        &s,
        &args(json!({"name": "api-7c9-x2x7q", "previous": true, "tail": 1})),
    )
    .unwrap();
    assert_eq!(tail, "FATAL: required setting PAYMENT_MODE is not set\n");
    let current = pods_log(
        &s,
        &args(json!({"namespace": "payments", "name": "api-7c9-x2x7q"})),
    )
    .unwrap();
    assert!(
        current.contains("has not logged any message yet"),
        "{current}"
    );
}

#[test]
fn events_filter_by_field_selector_and_render_like_the_real_server() {
    let s = scenario();
    let text = events_list(
        &s,
        &args(
            json!({"namespace": "payments", "fieldSelector": "involvedObject.name=api-7c9-x2x7q"}),
        ),
    )
    .unwrap();
    assert!(text.starts_with("# The following events (YAML format) were found:\n"));
    assert!(
        text.contains("Reason: BackOff") && !text.contains("Pulled"),
        "{text}"
    );
    assert!(text.contains("+0000 UTC"));
    assert_eq!(
        events_list(&s, &args(json!({"namespace": "other"}))).unwrap(),
        "# No events found"
    );
}

#[test]
fn replica_sets_carry_revisions_and_owner() {
    let text = resources_list(
        &scenario(),
        &args(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "payments"})),
    )
    .unwrap();
    assert!(
        text.contains("deployment.kubernetes.io/revision: '2'")
            || text.contains("deployment.kubernetes.io/revision: \"2\""),
        "{text}"
    );
    assert!(
        text.contains("image: registry/api:1.8.2")
            && text.contains("kubernetes.io/change-cause: deploy 1.8.3"),
        "{text}"
    );
}

/// Each ReplicaSet's template is its revision's pods' spec; what an older revision's pods leave
/// out (written in brief) is the newer one's, so only what the scenario says differs differs.
#[test]
fn replica_set_templates_come_from_their_revisions_pods() {
    let s = parse(
        r#"
alert: {text: "x", at: "2025-03-01T12:00:00Z"}
deployments:
  - name: quote
    namespace: pricing
    replicas: 2
    container: engine
    revisions:
      - {image: "registry/quote:3.8.2", created: -9d}
      - {image: "registry/quote:3.8.2", created: -46m}
pods:
  - name: quote-new-a
    namespace: pricing
    deployment: quote
    revision: 2
    labels: {pod-template-hash: new}
    containers:
      - name: engine
        image: registry/quote:3.8.2
        state: {running: {}}
        resources: {limits: {cpu: 500m}}
        specExtra: {env: [{name: MODE, value: fast}]}
  - name: quote-old-a
    namespace: pricing
    deployment: quote
    revision: 1
    labels: {pod-template-hash: old}
    containers:
      - name: engine
        image: registry/quote:3.8.2
        state: {running: {}}
        resources: {limits: {cpu: "2"}}
expect: {verdict: post}
"#,
    );
    let text = resources_list(
        &s,
        &args(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "pricing"})),
    )
    .unwrap();
    let sets: Vec<Value> = serde_norway::from_str(&text).unwrap();
    let template = |hash: &str| {
        sets.iter()
            .find(|rs| rs["metadata"]["labels"]["pod-template-hash"] == hash)
            .map(|rs| rs["spec"]["template"]["spec"]["containers"][0].clone())
            .unwrap()
    };
    let (old, new) = (template("old"), template("new"));
    assert_eq!(old["resources"]["limits"]["cpu"], "2", "{text}");
    assert_eq!(new["resources"]["limits"]["cpu"], "500m", "{text}");
    assert_eq!(
        old["env"], new["env"],
        "unsaid in revision 1 is not a change"
    );
    assert_eq!(new["env"][0]["value"], "fast");
}

#[test]
fn range_query_renders_a_prometheus_matrix_with_the_step() {
    let s = scenario();
    let start = Utc.with_ymd_and_hms(2025, 3, 1, 11, 30, 0).unwrap();
    let text = execute_range_query(&s, &args(json!({"query": "sum(rate( x[5m] ))", "start": "2025-03-01T11:30:00Z", "end": "2025-03-01T12:00:00Z", "step": "60s"}))).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["resultType"], "matrix");
    let values = v["result"][0]["values"].as_array().unwrap();
    assert_eq!(values.len(), 31);
    assert_eq!(values[0], json!([start.timestamp(), "0.01"]));
    assert_eq!(values[30][1], "0.35");
    assert_eq!(values[17][1], "0.01", "11:47 is before the step at -12m");
    assert_eq!(values[18][1], "0.35", "11:48 is the step");
    assert_eq!(
        values[18][0],
        json!((start + Duration::minutes(18)).timestamp())
    );
    let none = execute_range_query(
        &s,
        &args(json!({"query": "up", "start": "1740830400", "end": "1740830460", "step": "15s"})),
    )
    .unwrap();
    assert_eq!(none, r#"{"result":[],"resultType":"matrix"}"#);
    assert!(
        execute_range_query(
            &s,
            &args(json!({"query": "up", "start": "0", "end": "1740830460", "step": "1s"}))
        )
        .unwrap_err()
        .contains("11,000")
    );
}
