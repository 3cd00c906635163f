//! Writes on scenario worlds, without a server: restarts of each workload kind, suspending a
//! CronJob, cordoning a node no scenario lists, resourceVersions, `after_action`'s selection and
//! series, and the refusals that leave the world as it was (the MCP side is `tests/writes.rs`).

use std::path::Path;

use chrono::Duration;
use serde_json::json;

use super::*;
use crate::render::{execute_query, execute_range_query, resources_get, resources_list};

const WORLD: &str = r#"
alert: {text: "x", at: -2m}
deployments:
  - name: api
    namespace: shop
    replicas: 2
    revisions:
      - {image: "registry/api:1.0", created: -3d}
      - {image: "registry/api:1.1", created: -20m}
statefulsets:
  - {name: db, namespace: shop, replicas: 2}
daemonsets:
  - {name: agent, namespace: ops}
cronjobs:
  - {name: report, namespace: shop, schedule: "0 3 * * *", suspend: true}
services:
  - {name: api, namespace: shop, selector: {app: api}, ports: [{port: 80}]}
configmaps:
  - {name: api-config, namespace: shop, data: {mode: live}}
pods:
  - {name: api-6d8f9-aaaaa, namespace: shop, node: n1, deployment: api, containers: [{name: api, image: "registry/api:1.1", restartCount: 4}]}
  - {name: api-6d8f9-bbbbb, namespace: shop, node: n2, deployment: api, containers: [{name: api, image: "registry/api:1.1"}]}
  - {name: db-0, namespace: shop, node: n1, owner: {kind: StatefulSet, name: db}, containers: [{name: db, image: "postgres:16", restartCount: 2}]}
  - {name: db-1, namespace: shop, node: n2, owner: {kind: StatefulSet, name: db}, containers: [{name: db, image: "postgres:16"}]}
  - {name: agent-x1, namespace: ops, node: n1, owner: {kind: DaemonSet, name: agent}, containers: [{name: agent, image: "agent:2"}]}
  - {name: agent-x2, namespace: ops, node: n2, owner: {kind: DaemonSet, name: agent}, containers: [{name: agent, image: "agent:2"}]}
logs:
  - {pod: db-0, current: "old log\n"}
metrics:
  - metric: job_not_run
    labels: {cronjob: report}
    constant: 1
expect: {verdict: post}
"#;

fn world(extra: &str) -> Scenario {
    Scenario::parse("t", Path::new("t"), &format!("{WORLD}{extra}"), Utc::now()).unwrap()
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn object(s: &Scenario, api_version: &str, kind: &str, namespace: &str, name: &str) -> Value {
    let text = resources_get(
        s,
        &args(
            json!({"apiVersion": api_version, "kind": kind, "namespace": namespace, "name": name}),
        ),
    )
    .unwrap();
    serde_norway::from_str(&text).unwrap()
}

/// Applies `object`: the new world and the write (panics when nothing changed).
fn apply(s: &Scenario, object: &Value) -> (Scenario, AppliedWrite) {
    let written = call(
        s,
        WriteTool::CreateOrUpdate,
        &args(json!({"resource": object.to_string()})),
        Utc::now(),
        None,
    )
    .unwrap();
    written.changed.expect("the apply changed the world")
}

fn restarted(mut object: Value) -> Value {
    object["spec"]["template"]["metadata"]["annotations"] =
        json!({"kubectl.kubernetes.io/restartedAt": "2025-03-01T12:00:00Z"});
    object
}

fn pods_of<'a>(s: &'a Scenario, namespace: &str) -> Vec<&'a crate::scenario::PodSpec> {
    s.spec
        .pods
        .iter()
        .filter(|p| p.namespace == namespace)
        .collect()
}

fn value_now(s: &Scenario) -> Option<String> {
    let answer: Value =
        serde_json::from_str(&execute_query(s, &args(json!({"query": "job_not_run"}))).unwrap())
            .unwrap();
    answer["result"][0]["value"][1].as_str().map(String::from)
}

#[test]
fn a_restart_makes_a_new_revision_and_replaces_the_pods() {
    let s = world("");
    let (after, write) = apply(
        &s,
        &restarted(object(&s, "apps/v1", "Deployment", "shop", "api")),
    );
    assert_eq!(write.change, Change::Restart);
    let deployment = object(&after, "apps/v1", "Deployment", "shop", "api");
    assert_eq!(
        deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    assert_eq!(deployment["metadata"]["generation"], 3);
    let sets: Value = serde_norway::from_str(
        &resources_list(
            &after,
            &args(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet"})),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(sets.as_array().unwrap().len(), 3);
    let newest = &sets[2];
    assert_eq!(
        newest["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    assert_eq!(
        newest["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"],
        "2025-03-01T12:00:00Z"
    );
    let hash = newest["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap();
    let pods = pods_of(&after, "shop");
    let api: Vec<_> = pods.iter().filter(|p| p.deployment.is_some()).collect();
    assert_eq!(api.len(), 2);
    for pod in api {
        assert!(
            pod.name.starts_with(&format!("api-{hash}-")),
            "{}",
            pod.name
        );
        assert_eq!(pod.containers[0].image, "registry/api:1.1");
        assert_eq!(pod.containers[0].restart_count, 0);
        assert_eq!(
            pod.annotations
                .get("kubectl.kubernetes.io/restartedAt")
                .map(String::as_str),
            Some("2025-03-01T12:00:00Z")
        );
    }
    // The creation time is the oldest revision's, whatever their order.
    assert_eq!(
        deployment["metadata"]["creationTimestamp"],
        object(&s, "apps/v1", "Deployment", "shop", "api")["metadata"]["creationTimestamp"]
    );
}

#[test]
fn a_statefulset_restart_keeps_the_pod_names_and_a_daemonset_restart_keeps_the_nodes() {
    let s = world("");
    let (after, write) = apply(
        &s,
        &restarted(object(&s, "apps/v1", "StatefulSet", "shop", "db")),
    );
    assert_eq!(write.change, Change::Restart);
    let db: Vec<_> = pods_of(&after, "shop")
        .into_iter()
        .filter(|p| p.name.starts_with("db-"))
        .collect();
    assert_eq!(
        db.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["db-0", "db-1"]
    );
    assert!(db.iter().all(|p| p.containers[0].restart_count == 0));
    let revision =
        &object(&after, "apps/v1", "StatefulSet", "shop", "db")["status"]["updateRevision"];
    assert_eq!(
        db[0]
            .labels
            .get("controller-revision-hash")
            .map(String::as_str),
        revision.as_str()
    );
    // Its old log went with the old pod.
    assert!(!after.spec.logs.iter().any(|l| l.pod == "db-0"));

    let (after, _) = apply(
        &after,
        &restarted(object(&after, "apps/v1", "DaemonSet", "ops", "agent")),
    );
    let agents = pods_of(&after, "ops");
    assert_eq!(agents.len(), 2);
    assert!(
        agents
            .iter()
            .all(|p| p.name.starts_with("agent-") && !p.name.starts_with("agent-x"))
    );
    let mut nodes: Vec<_> = agents.iter().filter_map(|p| p.node.clone()).collect();
    nodes.sort();
    assert_eq!(nodes, ["n1", "n2"]);
}

#[test]
fn a_cronjob_is_resumed_and_suspended() {
    let s = world("");
    let mut cronjob = object(&s, "batch/v1", "CronJob", "shop", "report");
    cronjob["spec"]["suspend"] = json!(false);
    let (after, write) = apply(&s, &cronjob);
    assert_eq!(write.change, Change::Resume);
    assert_eq!(
        object(&after, "batch/v1", "CronJob", "shop", "report")["spec"]["suspend"],
        false
    );
    let mut cronjob = object(&after, "batch/v1", "CronJob", "shop", "report");
    cronjob["spec"]["suspend"] = json!(true);
    assert_eq!(apply(&after, &cronjob).1.change, Change::Suspend);
}

#[test]
fn a_node_only_pods_name_can_be_cordoned() {
    let s = world("");
    let mut node = object(&s, "v1", "Node", "", "n1");
    node["spec"]["unschedulable"] = json!(true);
    let (after, write) = apply(&s, &node);
    assert_eq!(
        (write.change, write.namespace.as_deref()),
        (Change::Cordon, None)
    );
    let node = object(&after, "v1", "Node", "", "n1");
    assert_eq!(
        node["spec"]["taints"][0]["key"],
        "node.kubernetes.io/unschedulable"
    );
    // A replacement avoids it.
    let deleted = call(
        &after,
        WriteTool::PodsDelete,
        &args(json!({"namespace": "shop", "name": "api-6d8f9-aaaaa"})),
        Utc::now(),
        None,
    )
    .unwrap();
    let (after, _) = deleted.changed.unwrap();
    let replacement = after
        .spec
        .pods
        .iter()
        .find(|p| p.deployment.is_some() && p.name != "api-6d8f9-bbbbb")
        .unwrap();
    assert_eq!(replacement.node.as_deref(), Some("n2"));
}

#[test]
fn resource_versions_are_stable_and_change_only_with_the_object() {
    let (a, b) = (world(""), world(""));
    let version = |s: &Scenario, kind: &str, name: &str| {
        object(
            s,
            if kind == "Service" { "v1" } else { "apps/v1" },
            kind,
            "shop",
            name,
        )["metadata"]["resourceVersion"]
            .clone()
    };
    assert_eq!(
        version(&a, "Deployment", "api"),
        version(&b, "Deployment", "api")
    );
    assert_ne!(
        version(&a, "Deployment", "api"),
        version(&a, "StatefulSet", "db")
    );
    let (after, _) = apply(
        &a,
        &restarted(object(&a, "apps/v1", "Deployment", "shop", "api")),
    );
    assert_ne!(
        version(&after, "Deployment", "api"),
        version(&a, "Deployment", "api")
    );
    assert_eq!(
        version(&after, "StatefulSet", "db"),
        version(&a, "StatefulSet", "db")
    );
    // The Service's Endpoints changed with the pods; the Service did not.
    assert_eq!(
        version(&after, "Service", "api"),
        version(&a, "Service", "api")
    );
}

#[test]
fn other_kinds_take_metadata_only() {
    let s = world("");
    let mut config = object(&s, "v1", "ConfigMap", "shop", "api-config");
    config["metadata"]["annotations"] = json!({"firstline.dev/action": "a-1"});
    let (after, write) = apply(&s, &config);
    assert_eq!(
        (write.change, write.action.as_deref()),
        (Change::Update, Some("a-1"))
    );
    let read = object(&after, "v1", "ConfigMap", "shop", "api-config");
    assert_eq!(
        read["metadata"]["annotations"]["firstline.dev/action"],
        "a-1"
    );
    let mut service = object(&s, "v1", "Service", "shop", "api");
    service["spec"]["type"] = json!("NodePort");
    let refused = call(
        &s,
        WriteTool::CreateOrUpdate,
        &args(json!({"resource": service.to_string()})),
        Utc::now(),
        None,
    )
    .unwrap_err();
    assert!(refused.contains("only metadata"), "{refused}");
}

#[test]
fn bad_objects_and_paused_deployments_are_refused() {
    let s = world("");
    let refused = |resource: &str| {
        call(
            &s,
            WriteTool::CreateOrUpdate,
            &args(json!({"resource": resource})),
            Utc::now(),
            None,
        )
        .unwrap_err()
    };
    assert!(
        refused("apiVersion: x/v9\nkind: Widget\nmetadata: {name: w}\n")
            .contains("no matches for kind \"Widget\" in version \"x/v9\"")
    );
    assert!(
        refused(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ghost, namespace: shop}\n"
        )
        .contains("deployments.apps \"ghost\" not found")
    );
    assert!(refused("[1, 2").starts_with("failed to create or update resources: "));

    let paused = world("").spec.deployments[0].clone();
    let mut s = world("");
    s.spec.deployments[0] = crate::scenario::DeploymentSpec {
        paused: true,
        ..paused
    };
    let error = call(
        &s,
        WriteTool::CreateOrUpdate,
        &args(json!({"resource": restarted(object(&s, "apps/v1", "Deployment", "shop", "api")).to_string()})),
        Utc::now(),
        None,
    )
    .unwrap_err();
    assert!(error.contains("paused"), "{error}");
}

#[test]
fn after_action_waits_for_the_write_it_selects() {
    let s = world(concat!(
        "after_action:\n",
        "  when: {kind: CronJob, change: resume}\n",
        "  metrics:\n",
        "    - {metric: job_not_run, labels: {cronjob: report}, points: [[0, 1], [+1m, 0]]}\n",
        "    - {metric: job_runs, labels: {cronjob: report}, constant: 1}\n",
    ));
    assert_eq!(value_now(&s).as_deref(), Some("1"));
    // Another write: the series do not change.
    let (other, _) = apply(
        &s,
        &restarted(object(&s, "apps/v1", "Deployment", "shop", "api")),
    );
    assert_eq!(other.spec.metrics, s.spec.metrics);
    assert!(other.spec.live.acted_at.is_none());

    let mut cronjob = object(&other, "batch/v1", "CronJob", "shop", "report");
    cronjob["spec"]["suspend"] = json!(false);
    let now = Utc::now();
    let written = call(
        &other,
        WriteTool::CreateOrUpdate,
        &args(json!({"resource": cronjob.to_string()})),
        now,
        None,
    )
    .unwrap();
    let (after, _) = written.changed.unwrap();
    assert_eq!(after.spec.live.acted_at, Some(now));
    // The old value holds until a minute after the action, then the recovered one.
    let at = |t: DateTime<Utc>| {
        let answer: Value = serde_json::from_str(
            &execute_query(
                &after,
                &args(json!({"query": "job_not_run", "time": t.timestamp()})),
            )
            .unwrap(),
        )
        .unwrap();
        answer["result"][0]["value"][1].as_str().map(String::from)
    };
    assert_eq!(at(now - Duration::minutes(30)).as_deref(), Some("1"));
    assert_eq!(at(now + Duration::seconds(30)).as_deref(), Some("1"));
    assert_eq!(at(now + Duration::minutes(2)).as_deref(), Some("0"));
    // A series only the action starts has no value before it.
    let range = |start: DateTime<Utc>, end: DateTime<Utc>| {
        let answer: Value = serde_json::from_str(
            &execute_range_query(
                &after,
                &args(json!({"query": "job_runs", "start": start.timestamp(), "end": end.timestamp(), "step": "60s"})),
            )
            .unwrap(),
        )
        .unwrap();
        answer["result"][0]["values"].as_array().map_or(0, Vec::len)
    };
    assert_eq!(
        range(now - Duration::minutes(30), now - Duration::minutes(1)),
        0
    );
    assert_eq!(
        range(now - Duration::minutes(5), now + Duration::minutes(5)),
        5
    );
}

#[test]
fn refusals_change_nothing() {
    let s = world("");
    let object = restarted(object(&s, "apps/v1", "Deployment", "shop", "api"));
    let resource = args(json!({"resource": object.to_string()}));
    let error = call(
        &s,
        WriteTool::CreateOrUpdate,
        &resource,
        Utc::now(),
        Some("system:serviceaccount:x:y"),
    )
    .unwrap_err();
    assert!(
        error.contains("User \"system:serviceaccount:x:y\" cannot patch resource \"deployments\""),
        "{error}"
    );
    let mut stale = object.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    let error = call(
        &s,
        WriteTool::CreateOrUpdate,
        &args(json!({"resource": stale.to_string()})),
        Utc::now(),
        None,
    )
    .unwrap_err();
    assert!(error.contains("the object has been modified"), "{error}");
    // Without a resourceVersion there is no precondition.
    if let Some(metadata) = stale["metadata"].as_object_mut() {
        metadata.remove("resourceVersion");
    }
    assert!(
        call(
            &s,
            WriteTool::CreateOrUpdate,
            &args(json!({"resource": stale.to_string()})),
            Utc::now(),
            None
        )
        .unwrap()
        .changed
        .is_some()
    );
}
