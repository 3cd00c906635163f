//! The write endpoint over real MCP: a client connects to `LabHandle::write_url()` and
//! `mcp_url()` as Firstline's executor and verifier would, applies what the action catalogue
//! applies (a rollback, a scale, a pod deletion, a cordon), and reads the changed world back on
//! both endpoints; `/writes` and `LabHandle::writes()` prove how many writes took effect.

mod support;

use std::net::SocketAddr;
use std::path::Path;

use chrono::Utc;
use firstline_lab::{LabHandle, Scenario, serve_http};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

use support::{Client, apply, call, connect, get, http, names, pods, refused, try_call, yaml};

const WORLD: &str = r#"
alert: {text: "CheckoutHighErrorRate shop/checkout", at: -2m}
nodes:
  - {name: worker-1}
  - {name: worker-2}
deployments:
  - name: checkout
    namespace: shop
    replicas: 2
    revisions:
      - {image: "registry/checkout:5.2.1", created: -6d, change_cause: "deploy 5.2.1"}
      - {image: "registry/checkout:5.3.0", created: -11m, change_cause: "deploy 5.3.0"}
statefulsets:
  - {name: cart-db, namespace: shop, replicas: 2}
pods:
  - name: checkout-6c9f7d8b5-8kq2w
    namespace: shop
    node: worker-1
    deployment: checkout
    labels: {pod-template-hash: 6c9f7d8b5}
    containers:
      - {name: checkout, image: "registry/checkout:5.3.0", ready: false, restartCount: 6, state: {waiting: {reason: CrashLoopBackOff}}, lastState: {terminated: {exitCode: 2, finishedAt: -1m}}}
  - name: checkout-6c9f7d8b5-r7tnx
    namespace: shop
    node: worker-2
    deployment: checkout
    labels: {pod-template-hash: 6c9f7d8b5}
    containers:
      - {name: checkout, image: "registry/checkout:5.3.0", ready: false, restartCount: 5, state: {waiting: {reason: CrashLoopBackOff}}, lastState: {terminated: {exitCode: 2, finishedAt: -2m}}}
  - name: cart-db-0
    namespace: shop
    node: worker-1
    owner: {kind: StatefulSet, name: cart-db}
    containers: [{name: postgres, image: "postgres:16.4", restartCount: 3}]
  - name: cart-db-1
    namespace: shop
    node: worker-2
    owner: {kind: StatefulSet, name: cart-db}
    containers: [{name: postgres, image: "postgres:16.4"}]
logs:
  - pod: checkout-6c9f7d8b5-8kq2w
    previous: "panic: assignment to entry in nil map (taxrate.Client)\n"
metrics:
  - query: 'sum(rate(http_requests_total{service="checkout",code=~"5.."}[5m])) / sum(rate(http_requests_total{service="checkout"}[5m]))'
    labels: {service: checkout}
    points: [[-45m, 0.002], [-9m, 0.09]]
after_action:
  when: {kind: Deployment, name: checkout, change: rollback}
  metrics:
    - query: 'sum(rate(http_requests_total{service="checkout",code=~"5.."}[5m])) / sum(rate(http_requests_total{service="checkout"}[5m]))'
      labels: {service: checkout}
      points: [[0, 0.0021]]
  logs:
    - {workload: checkout, current: "INFO checkout 5.2.1 listening on :8080\n"}
expect: {verdict: post}
"#;

const ERROR_RATIO: &str = r#"sum(rate(http_requests_total{service="checkout",code=~"5.."}[5m])) / sum(rate(http_requests_total{service="checkout"}[5m]))"#;

async fn lab(extra: &str) -> LabHandle {
    let text = format!("{WORLD}{extra}");
    let scenario = Scenario::parse("writes", Path::new("writes.rs"), &text, Utc::now())
        .expect("the test scenario loads");
    serve_http(scenario, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("the lab starts")
}

async fn rollback_object(client: &Client, revision: &str, action: &str) -> Value {
    support::rollback_object(client, "shop", "checkout", revision, action).await
}

/// The instant value of the alert's ratio now.
async fn ratio_now(client: &Client) -> f64 {
    support::value_now(client, ERROR_RATIO)
        .await
        .expect("the ratio has a value")
}

#[tokio::test]
async fn the_read_endpoint_neither_lists_nor_accepts_the_write_tools() {
    let lab = lab("").await;
    let read = connect(lab.mcp_url()).await;
    let write = connect(lab.write_url()).await;
    let listed = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.to_string()).collect()
    };
    let read_tools = listed(read.list_all_tools().await.unwrap());
    let write_tools = listed(write.list_all_tools().await.unwrap());
    for tool in [
        "resources_create_or_update",
        "resources_scale",
        "pods_delete",
    ] {
        assert!(
            !read_tools.contains(&tool.to_string()),
            "{tool} on the read endpoint"
        );
        assert!(
            write_tools.contains(&tool.to_string()),
            "{tool} missing on the write endpoint"
        );
        let error = try_call(
            &read,
            tool,
            json!({"name": "cart-db-0", "namespace": "shop"}),
        )
        .await
        .expect_err("a JSON-RPC error");
        match error {
            ServiceError::McpError(data) => assert_eq!(data.code.0, -32602, "{tool}"),
            other => panic!("{tool}: {other:?}"),
        }
    }
    for tool in ["resources_get", "pods_list_in_namespace", "execute_query"] {
        assert!(
            write_tools.contains(&tool.to_string()),
            "{tool} on the write endpoint"
        );
    }
    let tools = write.list_all_tools().await.unwrap();
    let scale = tools.iter().find(|t| t.name == "resources_scale").unwrap();
    assert_eq!(
        scale.input_schema.get("required"),
        Some(&json!(["apiVersion", "kind", "name"]))
    );
    assert_eq!(scale.input_schema["properties"]["scale"]["type"], "integer");
    assert!(lab.writes().is_empty());
    lab.shutdown().await;
}

#[tokio::test]
async fn a_rollback_changes_the_revision_and_the_pods_and_every_read_shows_it() {
    let lab = lab("").await;
    let write = connect(lab.write_url()).await;
    let read = connect(lab.mcp_url()).await;
    let before = get(&read, "apps/v1", "Deployment", "shop", "checkout").await;
    assert_eq!(
        before["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    let old_version = before["metadata"]["resourceVersion"].clone();
    assert!(old_version.is_string(), "{before}");
    assert!((ratio_now(&read).await - 0.09).abs() < 1e-9);

    let object = rollback_object(&write, "1", "act-42").await;
    let answer = call(&write, "resources_create_or_update", apply(&object)).await;
    assert!(
        answer.starts_with(
            "# The following resources (YAML) have been created or updated successfully\n"
        ),
        "{answer}"
    );

    let after = get(&read, "apps/v1", "Deployment", "shop", "checkout").await;
    let annotations = &after["metadata"]["annotations"];
    assert_eq!(
        annotations["deployment.kubernetes.io/revision"], "3",
        "{after}"
    );
    assert_eq!(annotations["firstline.dev/action"], "act-42");
    assert_eq!(after["metadata"]["generation"], 3);
    assert_ne!(after["metadata"]["resourceVersion"], old_version);
    assert_eq!(
        after["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry/checkout:5.2.1"
    );
    // The old ReplicaSet is current again under revision 3; the bad one keeps revision 2.
    let sets = yaml(
        &call(
            &read,
            "resources_list",
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "shop"}),
        )
        .await,
    );
    let revision_of = |image: &str| {
        sets.as_array()
            .into_iter()
            .flatten()
            .find(|s| s["spec"]["template"]["spec"]["containers"][0]["image"] == image)
            .map(|s| {
                (
                    s["metadata"]["annotations"].clone(),
                    s["spec"]["replicas"].clone(),
                )
            })
    };
    let (good, good_replicas) = revision_of("registry/checkout:5.2.1").unwrap();
    assert_eq!(good["deployment.kubernetes.io/revision"], "3");
    assert_eq!(good["deployment.kubernetes.io/revision-history"], "1");
    assert_eq!(good_replicas, 2);
    let (bad, bad_replicas) = revision_of("registry/checkout:5.3.0").unwrap();
    assert_eq!(bad["deployment.kubernetes.io/revision"], "2");
    assert_eq!(bad_replicas, 0);

    let new_pods = pods(&read, "shop", "app=checkout").await;
    assert_eq!(new_pods.len(), 2, "{new_pods:?}");
    for pod in &new_pods {
        let name = pod["metadata"]["name"].as_str().unwrap();
        assert!(!name.starts_with("checkout-6c9f7d8b5-"), "{name}");
        assert_ne!(pod["metadata"]["labels"]["pod-template-hash"], "6c9f7d8b5");
        assert_eq!(pod["status"]["phase"], "Running");
        let status = &pod["status"]["containerStatuses"][0];
        assert_eq!(status["image"], "registry/checkout:5.2.1");
        assert_eq!(status["ready"], true);
        assert_eq!(status["restartCount"], 0);
        assert!(pod["spec"]["nodeName"].is_string());
        let log = call(
            &read,
            "pods_log",
            json!({"namespace": "shop", "name": name}),
        )
        .await;
        assert_eq!(log, "INFO checkout 5.2.1 listening on :8080\n");
    }
    let gone = refused(
        &read,
        "pods_get",
        json!({"namespace": "shop", "name": "checkout-6c9f7d8b5-8kq2w"}),
    )
    .await;
    assert!(gone.contains("not found"), "{gone}");
    let events = call(&read, "events_list", json!({"namespace": "shop"})).await;
    assert!(events.contains("ScalingReplicaSet"), "{events}");
    assert!(events.contains("to 0 from 2"), "{events}");

    // The alert's expression recovered from the action on; a range query shows the change.
    assert!((ratio_now(&read).await - 0.0021).abs() < 1e-9);
    let now = Utc::now();
    let range: Value = serde_json::from_str(
        &call(
            &read,
            "execute_range_query",
            json!({"query": ERROR_RATIO, "start": (now - chrono::Duration::minutes(10)).to_rfc3339(), "end": (now + chrono::Duration::seconds(30)).to_rfc3339(), "step": "15s"}),
        )
        .await,
    )
    .unwrap();
    let values: Vec<String> = range["result"][0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v[1].as_str().unwrap().to_string())
        .collect();
    assert_eq!(values.first().map(String::as_str), Some("0.09"));
    assert_eq!(values.last().map(String::as_str), Some("0.0021"));

    let writes = lab.writes().all();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0].tool, "resources_create_or_update");
    assert_eq!(writes[0].kind, "Deployment");
    assert_eq!(writes[0].change.as_str(), "rollback");
    assert_eq!(writes[0].action.as_deref(), Some("act-42"));
    assert_eq!(
        writes[0].resource_version.as_deref(),
        after["metadata"]["resourceVersion"].as_str()
    );
    let listed: Value = http()
        .get(lab.writes_url())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed[0]["action"], "act-42", "{listed}");
    assert_eq!(listed[0]["change"], "rollback");
    assert_eq!(listed[0]["namespace"], "shop");
    lab.shutdown().await;
}

#[tokio::test]
async fn a_stale_resource_version_is_refused_and_not_counted() {
    let lab = lab("").await;
    let write = connect(lab.write_url()).await;
    let object = rollback_object(&write, "1", "act-7").await;
    call(&write, "resources_create_or_update", apply(&object)).await;
    // The executor retried the very same apply: its resourceVersion is now stale.
    let error = refused(&write, "resources_create_or_update", apply(&object)).await;
    assert!(
        error.contains("Operation cannot be fulfilled on deployments.apps \"checkout\": the object has been modified; please apply your changes to the latest version and try again"),
        "{error}"
    );
    assert_eq!(lab.writes().with_action("act-7").len(), 1);
    assert_eq!(lab.writes().len(), 1);
    // Applying what is already there changes nothing and is no write either.
    let current = get(&write, "apps/v1", "Deployment", "shop", "checkout").await;
    call(&write, "resources_create_or_update", apply(&current)).await;
    assert_eq!(lab.writes().len(), 1);
    lab.shutdown().await;
}

#[tokio::test]
async fn scaling_adds_and_removes_pods() {
    let lab = lab("").await;
    let write = connect(lab.write_url()).await;
    let args = |scale: Option<u32>| {
        let mut args = json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "checkout"});
        if let Some(scale) = scale {
            args["scale"] = json!(scale);
        }
        args
    };
    let shown = call(&write, "resources_scale", args(Some(4))).await;
    assert!(
        shown.starts_with("# Current resource scale (YAML) is below\n"),
        "{shown}"
    );
    let scale = yaml(&shown);
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 4);
    assert_eq!(scale["status"]["selector"], "app=checkout");
    assert_eq!(pods(&write, "shop", "app=checkout").await.len(), 4);
    let current = yaml(&call(&write, "resources_scale", args(None)).await);
    assert_eq!(current["spec"]["replicas"], 4);
    assert_eq!(lab.writes().len(), 1);

    call(&write, "resources_scale", args(Some(1))).await;
    let left = pods(&write, "shop", "app=checkout").await;
    assert_eq!(left.len(), 1);
    let deployment = get(&write, "apps/v1", "Deployment", "shop", "checkout").await;
    assert_eq!(deployment["spec"]["replicas"], 1);
    let writes = lab.writes().all();
    assert_eq!(writes.len(), 2);
    assert!(
        writes
            .iter()
            .all(|w| w.change.as_str() == "scale" && w.action.is_none())
    );
    // The same scale again changes nothing.
    call(&write, "resources_scale", args(Some(1))).await;
    assert_eq!(lab.writes().len(), 2);

    let sts = |scale: u32| json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "namespace": "shop", "name": "cart-db", "scale": scale});
    call(&write, "resources_scale", sts(3)).await;
    let db = names(&pods(&write, "shop", "app=cart-db").await);
    assert!(db.contains(&"cart-db-2".to_string()), "{db:?}");
    call(&write, "resources_scale", sts(1)).await;
    assert_eq!(
        names(&pods(&write, "shop", "app=cart-db").await),
        vec!["cart-db-0"]
    );
    lab.shutdown().await;
}

#[tokio::test]
async fn a_deleted_pod_is_replaced_by_its_controller() {
    let lab = lab("").await;
    let write = connect(lab.write_url()).await;
    let read = connect(lab.mcp_url()).await;
    let answer = call(
        &write,
        "pods_delete",
        json!({"namespace": "shop", "name": "checkout-6c9f7d8b5-8kq2w"}),
    )
    .await;
    assert_eq!(answer, "Pod deleted successfully");
    let now = names(&pods(&read, "shop", "app=checkout").await);
    assert_eq!(now.len(), 2, "{now:?}");
    assert!(!now.contains(&"checkout-6c9f7d8b5-8kq2w".to_string()));
    let replacement = now
        .iter()
        .find(|n| *n != "checkout-6c9f7d8b5-r7tnx")
        .unwrap();
    assert!(
        replacement.starts_with("checkout-6c9f7d8b5-"),
        "{replacement}"
    );
    let pod = yaml(
        &call(
            &read,
            "pods_get",
            json!({"namespace": "shop", "name": replacement}),
        )
        .await,
    );
    assert_eq!(pod["status"]["containerStatuses"][0]["restartCount"], 0);
    assert_eq!(pod["status"]["containerStatuses"][0]["ready"], true);

    // A StatefulSet's pod comes back under its name, fresh.
    call(
        &write,
        "pods_delete",
        json!({"namespace": "shop", "name": "cart-db-0"}),
    )
    .await;
    let pod = yaml(
        &call(
            &read,
            "pods_get",
            json!({"namespace": "shop", "name": "cart-db-0"}),
        )
        .await,
    );
    assert_eq!(pod["status"]["containerStatuses"][0]["restartCount"], 0);
    assert_eq!(pod["status"]["phase"], "Running");

    let missing = refused(
        &write,
        "pods_delete",
        json!({"namespace": "shop", "name": "ghost"}),
    )
    .await;
    assert_eq!(
        missing,
        "failed to delete pod ghost in namespace shop: pods \"ghost\" not found"
    );
    let writes = lab.writes().all();
    assert_eq!(writes.len(), 2);
    assert!(
        writes
            .iter()
            .all(|w| w.change.as_str() == "delete" && w.kind == "Pod")
    );
    // Not the rollback `after_action` waits for: the ratio has not recovered.
    assert!((ratio_now(&read).await - 0.09).abs() < 1e-9);
    lab.shutdown().await;
}

#[tokio::test]
async fn a_cordon_taints_the_node_and_an_uncordon_clears_it() {
    let lab = lab("").await;
    let write = connect(lab.write_url()).await;
    let mut node = get(&write, "v1", "Node", "", "worker-2").await;
    node["spec"]["unschedulable"] = json!(true);
    node["metadata"]["annotations"] = json!({"firstline.dev/action": "act-cordon"});
    call(&write, "resources_create_or_update", apply(&node)).await;
    let cordoned = get(&write, "v1", "Node", "", "worker-2").await;
    assert_eq!(cordoned["spec"]["unschedulable"], true);
    let taints = cordoned["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        taints
            .iter()
            .any(|t| t["key"] == "node.kubernetes.io/unschedulable" && t["effect"] == "NoSchedule"),
        "{cordoned}"
    );
    // New pods avoid the cordoned node.
    let scale = json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "checkout", "scale": 4});
    call(&write, "resources_scale", scale).await;
    for pod in pods(&write, "shop", "app=checkout").await {
        let created = pod["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap_or_default();
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        if !name.ends_with("8kq2w") && !name.ends_with("r7tnx") {
            assert_eq!(pod["spec"]["nodeName"], "worker-1", "{name} {created}");
        }
    }
    let mut node = cordoned;
    node["spec"]["unschedulable"] = json!(false);
    call(&write, "resources_create_or_update", apply(&node)).await;
    let uncordoned = get(&write, "v1", "Node", "", "worker-2").await;
    assert!(
        uncordoned["spec"].get("unschedulable").is_none(),
        "{uncordoned}"
    );
    assert!(uncordoned["spec"].get("taints").is_none(), "{uncordoned}");
    let changes: Vec<&str> = lab
        .writes()
        .all()
        .iter()
        .map(|w| w.change.as_str())
        .collect();
    assert_eq!(changes, ["cordon", "scale", "uncordon"]);
    let first = &lab.writes().all()[0];
    assert_eq!(
        (first.namespace.as_deref(), first.action.as_deref()),
        (None, Some("act-cordon"))
    );
    lab.shutdown().await;
}

#[tokio::test]
async fn refused_writes_leave_the_world_unchanged() {
    let lab = lab("").await;
    let write = connect(lab.write_url()).await;
    lab.forbid_writes(true);
    let object = rollback_object(&write, "1", "act-9").await;
    let error = refused(&write, "resources_create_or_update", apply(&object)).await;
    assert_eq!(
        error,
        "failed to create or update resources: deployments.apps \"checkout\" is forbidden: User \"system:serviceaccount:firstline:firstline-actions\" cannot patch resource \"deployments\" in API group \"apps\" in the namespace \"shop\""
    );
    let scale = json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "checkout", "scale": 3});
    let error = refused(&write, "resources_scale", scale).await;
    assert!(
        error.ends_with("cannot update resource \"deployments/scale\" in API group \"apps\" in the namespace \"shop\""),
        "{error}"
    );
    let error = refused(
        &write,
        "pods_delete",
        json!({"namespace": "shop", "name": "cart-db-1"}),
    )
    .await;
    assert!(
        error.ends_with("pods \"cart-db-1\" is forbidden: User \"system:serviceaccount:firstline:firstline-actions\" cannot delete resource \"pods\" in API group \"\" in the namespace \"shop\""),
        "{error}"
    );
    let mut node = get(&write, "v1", "Node", "", "worker-1").await;
    node["spec"]["unschedulable"] = json!(true);
    let error = refused(&write, "resources_create_or_update", apply(&node)).await;
    assert!(
        error.contains("cannot patch resource \"nodes\" in API group \"\" at the cluster scope"),
        "{error}"
    );
    assert!(lab.writes().is_empty());
    let deployment = get(&write, "apps/v1", "Deployment", "shop", "checkout").await;
    assert_eq!(
        deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    assert_eq!(pods(&write, "shop", "app=checkout").await.len(), 2);
    assert!((ratio_now(&write).await - 0.09).abs() < 1e-9);

    // Once allowed, the same apply goes through (its resourceVersion is still current).
    lab.forbid_writes(false);
    call(&write, "resources_create_or_update", apply(&object)).await;
    assert_eq!(lab.writes().len(), 1);
    lab.shutdown().await;
}

#[tokio::test]
async fn a_scenario_can_refuse_every_write_and_inject_a_write_fault() {
    let lab = lab(concat!(
        "writes: {forbidden: true, user: \"system:serviceaccount:ops:bot\"}\n",
        "raw_tool_results:\n",
        "  - {tool: pods_delete, args: {name: cart-db-1}, error: \"etcdserver: request timed out\"}\n",
    ))
    .await;
    let write = connect(lab.write_url()).await;
    let error = refused(
        &write,
        "pods_delete",
        json!({"namespace": "shop", "name": "cart-db-0"}),
    )
    .await;
    assert!(
        error.contains("User \"system:serviceaccount:ops:bot\" cannot delete"),
        "{error}"
    );
    let error = refused(
        &write,
        "pods_delete",
        json!({"namespace": "shop", "name": "cart-db-1"}),
    )
    .await;
    assert_eq!(error, "etcdserver: request timed out");
    // The recorded result does not make the tool appear on the read endpoint.
    let read = connect(lab.mcp_url()).await;
    let tools = read.list_all_tools().await.unwrap();
    assert!(!tools.iter().any(|t| t.name == "pods_delete"));
    assert!(lab.writes().is_empty());
    assert_eq!(lab.counts().get("pods_delete"), 2);
    lab.shutdown().await;
}
