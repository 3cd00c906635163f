//! The scenarios written for act-with-approval, driven as the end-to-end test will: the alert's
//! expression is above its threshold, the catalogue's action is applied once through the write
//! endpoint, and the expression reads recovered on the read endpoint; the wrong action recovers
//! nothing.

mod support;

use std::net::SocketAddr;
use std::path::Path;

use firstline_lab::{LabHandle, Scenario, serve_http};
use serde_json::json;

use support::{Client, apply, call, connect, get, pods, value_now};

async fn lab(name: &str) -> LabHandle {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name);
    let scenario = Scenario::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    serve_http(scenario, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("the lab starts")
}

/// The alert's expression of a scenario: its first `metrics[]` entry's query.
fn alert_query(lab: &LabHandle) -> String {
    lab.scenario().spec.metrics[0]
        .query
        .clone()
        .expect("the first series is the alert's expression")
}

/// A rollback scenario: above the threshold, a restart does not help, the rollback does.
async fn rollback_recovers(name: &str, namespace: &str, deployment: &str, threshold: f64) {
    let lab = lab(name).await;
    let query = alert_query(&lab);
    let write = connect(lab.write_url()).await;
    let read: Client = connect(lab.mcp_url()).await;
    let firing = value_now(&read, &query).await.expect("a value");
    assert!(firing > threshold, "{name}: {firing}");

    // A rollout restart keeps the bad revision: nothing recovers.
    let mut restart = get(&write, "apps/v1", "Deployment", namespace, deployment).await;
    restart["spec"]["template"]["metadata"]["annotations"] =
        json!({"kubectl.kubernetes.io/restartedAt": "2025-01-01T00:00:00Z"});
    call(&write, "resources_create_or_update", apply(&restart)).await;
    assert!(value_now(&read, &query).await.expect("a value") > threshold);

    let object = support::rollback_object(&write, namespace, deployment, "1", "act-rollback").await;
    call(&write, "resources_create_or_update", apply(&object)).await;
    let recovered = value_now(&read, &query).await.expect("a value");
    assert!(recovered < threshold, "{name}: {recovered}");
    let selector = format!("app={deployment}");
    for pod in pods(&read, namespace, &selector).await {
        let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let log = call(
            &read,
            "pods_log",
            json!({"namespace": namespace, "name": pod_name}),
        )
        .await;
        assert!(
            log.contains("listening") || log.contains("Started"),
            "{pod_name}: {log}"
        );
    }
    let writes = lab.writes();
    assert_eq!(writes.with_action("act-rollback").len(), 1);
    assert_eq!(writes.len(), 2);
    lab.shutdown().await;
}

#[tokio::test]
async fn the_orders_api_rollback_recovers_the_error_ratio() {
    rollback_recovers(
        "rollback-orders-api-gift-card-panic-recovers",
        "shop",
        "orders-api",
        0.05,
    )
    .await;
}

#[tokio::test]
async fn the_search_api_rollback_recovers_the_error_ratio() {
    rollback_recovers(
        "rollback-search-api-es-client-400-recovers",
        "catalog",
        "search-api",
        0.02,
    )
    .await;
}

#[tokio::test]
async fn resuming_the_ledger_export_recovers_after_its_run() {
    let lab = lab("cronjob-ledger-export-suspended-resume-recovers").await;
    let query = alert_query(&lab);
    let write = connect(lab.write_url()).await;
    let read = connect(lab.mcp_url()).await;
    assert!(value_now(&read, &query).await.expect("a value") > 93600.0);
    let mut cronjob = get(&write, "batch/v1", "CronJob", "finance", "ledger-export").await;
    assert_eq!(cronjob["spec"]["suspend"], true);
    cronjob["spec"]["suspend"] = json!(false);
    cronjob["metadata"]["annotations"] = json!({"firstline.dev/action": "act-resume"});
    call(&write, "resources_create_or_update", apply(&cronjob)).await;
    let resumed = get(&read, "batch/v1", "CronJob", "finance", "ledger-export").await;
    assert_eq!(resumed["spec"]["suspend"], false);
    assert_eq!(
        resumed["metadata"]["annotations"]["firstline.dev/action"],
        "act-resume"
    );
    let suspended = value_now(
        &read,
        r#"kube_cronjob_spec_suspend{namespace="finance",cronjob="ledger-export"}"#,
    )
    .await;
    assert_eq!(suspended, Some(0.0));
    // The missed run succeeds 45 s after the resume; until then the expression still fires.
    let now = chrono::Utc::now();
    let at = |t: chrono::DateTime<chrono::Utc>| json!({"query": query, "time": t.timestamp()});
    let before: serde_json::Value =
        serde_json::from_str(&call(&read, "execute_query", at(now)).await).unwrap();
    assert!(
        before["result"][0]["value"][1]
            .as_str()
            .unwrap()
            .parse::<f64>()
            .unwrap()
            > 93600.0
    );
    let after: serde_json::Value = serde_json::from_str(
        &call(
            &read,
            "execute_query",
            at(now + chrono::Duration::seconds(60)),
        )
        .await,
    )
    .unwrap();
    assert!(
        after["result"][0]["value"][1]
            .as_str()
            .unwrap()
            .parse::<f64>()
            .unwrap()
            < 93600.0
    );
    assert_eq!(lab.writes().with_action("act-resume").len(), 1);
    lab.shutdown().await;
}
