//! What groups compare: a round's root (verified headline only, namespaced, a pod's cause keyed
//! to its workload with the cause's kind) and whether a later alert shares a NotReady node's
//! root for one object read.

use std::sync::Arc;

use super::fake::FakeSource;
use super::*;
use crate::sharing::{Sharing, shares};
use crate::tools::CapabilityRequest;
use firstline_alert::parse_alert;

const POD_ON_LOST_NODE: &str = r#"{"apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "orders-api-6f7c9d8b5-q2w3e", "namespace": "shop"},
  "spec": {"nodeName": "worker-3"},
  "status": {"phase": "Running", "conditions": [
    {"type": "Ready", "status": "False", "reason": "NodeNotReady"}]}}"#;

const POD_READY_ELSEWHERE: &str = r#"{"apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "orders-api-6f7c9d8b5-q2w3e", "namespace": "shop"},
  "spec": {"nodeName": "worker-7"},
  "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}"#;

fn pod_alert() -> firstline_alert::AlertTarget {
    parse_alert(
        "[FIRING:1] KubePodNotReady (shop orders-api-6f7c9d8b5-q2w3e)\n*Details:*\n  \
         • *alertname:* `KubePodNotReady`\n  • *namespace:* `shop`\n  \
         • *pod:* `orders-api-6f7c9d8b5-q2w3e`",
    )
}

fn lost_node() -> Sharing {
    Sharing::PodsOnNode {
        node: "worker-3".into(),
    }
}

#[tokio::test]
async fn a_pod_not_ready_on_the_lost_node_shares_its_root_for_one_read() {
    let source = FakeSource::new().serve(Capability::PodDescribe, POD_ON_LOST_NODE);
    let evidence = shares(&source, &pod_alert(), &lost_node())
        .await
        .expect("shared");
    assert!(
        evidence.contains("orders-api-6f7c9d8b5-q2w3e")
            && evidence.contains("worker-3")
            && evidence.contains("not ready"),
        "{evidence}"
    );
    assert_eq!(
        source.requests(),
        [CapabilityRequest::PodDescribe {
            namespace: "shop".into(),
            pod: "orders-api-6f7c9d8b5-q2w3e".into()
        }]
    );
}

#[tokio::test]
async fn a_ready_pod_elsewhere_an_unreadable_pod_or_no_subject_share_nothing() {
    let elsewhere = FakeSource::new().serve(Capability::PodDescribe, POD_READY_ELSEWHERE);
    assert_eq!(shares(&elsewhere, &pod_alert(), &lost_node()).await, None);
    let down = FakeSource::new().fail(Capability::PodDescribe, "connection refused");
    assert_eq!(shares(&down, &pod_alert(), &lost_node()).await, None);
    let nothing = FakeSource::new();
    let unnamed = parse_alert("[FIRING:1] Watchdog\n*Details:*\n  • *alertname:* `Watchdog`");
    assert_eq!(shares(&nothing, &unnamed, &lost_node()).await, None);
    assert!(
        nothing.requests().is_empty(),
        "nothing to read, nothing read"
    );
    // An alert that names the node itself needs no read.
    let node_alert = parse_alert(
        "[FIRING:1] KubeNodeNotReady\n*Details:*\n  • *alertname:* `KubeNodeNotReady`\n  \
         • *node:* `worker-3`",
    );
    assert!(shares(&nothing, &node_alert, &lost_node()).await.is_some());
    assert!(nothing.requests().is_empty());
}

#[tokio::test]
async fn a_verified_config_error_roots_its_workload_with_its_kind() {
    let source = Arc::new(crash_loop_world());
    let done = run(&source, CRASH_ALERT).await;
    let root = done
        .report
        .as_ref()
        .and_then(|r| r.root.clone())
        .expect("a root");
    assert_eq!(root.key, "workload||default|payments-api|ConfigError");
    assert!(root.evidence.starts_with('E'), "{}", root.evidence);
    assert_eq!(
        root.sharing, None,
        "a config error is not shared by what runs beside it"
    );
}

#[tokio::test]
async fn a_services_target_down_shares_the_root_when_a_pod_behind_it_is_on_the_lost_node() {
    let service = r#"{"apiVersion": "v1", "kind": "Service",
      "metadata": {"name": "redis-sessions-metrics", "namespace": "shop"},
      "spec": {"selector": {"app": "redis-sessions"}}}"#;
    let pods = r#"{"apiVersion": "v1", "kind": "List", "items": [
      {"kind": "Pod", "metadata": {"name": "redis-sessions-0", "namespace": "shop"},
       "spec": {"nodeName": "worker-1"},
       "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
      {"kind": "Pod", "metadata": {"name": "redis-sessions-1", "namespace": "shop"},
       "spec": {"nodeName": "worker-3"},
       "status": {"conditions": [{"type": "Ready", "status": "False"}]}}]}"#;
    let source = FakeSource::new()
        .serve(Capability::ObjectGet, service)
        .serve(Capability::PodList, pods);
    let target_down = parse_alert(
        "[FIRING:1] TargetDown (shop redis-sessions-metrics)\n*Details:*\n  \
         • *alertname:* `TargetDown`\n  • *job:* `redis-sessions-metrics`\n  \
         • *namespace:* `shop`\n  • *service:* `redis-sessions-metrics`",
    );
    let evidence = shares(&source, &target_down, &lost_node())
        .await
        .expect("shared");
    assert!(
        evidence.contains("redis-sessions-1") && evidence.contains("behind Service"),
        "{evidence}"
    );
    assert_eq!(
        source.requests()[1],
        CapabilityRequest::PodList {
            namespace: "shop".into(),
            label_selector: Some("app=redis-sessions".into())
        }
    );
    // Behind a Service whose pods all run elsewhere, nothing is shared.
    let healthy = pods.replace("worker-3", "worker-2");
    let elsewhere = FakeSource::new()
        .serve(Capability::ObjectGet, service)
        .serve(Capability::PodList, &healthy);
    assert_eq!(shares(&elsewhere, &target_down, &lost_node()).await, None);
}
