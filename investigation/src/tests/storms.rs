//! What groups compare: a round's root (verified headline only, namespaced, a pod's cause keyed
//! to its workload with the cause's kind) and whether a later alert shares a NotReady node's
//! root for one object read.

use std::sync::Arc;

use super::*;
use crate::sharing::{Sharing, shares};
use crate::tools::{CapabilityRequest, EvidenceSource};
use firstline_alert::parse_alert;

const NODE_LOST: &str = r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-3"},
  "status": {"conditions": [{"type": "Ready", "status": "Unknown",
    "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status."}]}}"#;

const POD_ON_LOST_NODE: &str = r#"{"apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "orders-api-6f7c9d8b5-q2w3e", "namespace": "shop"},
  "spec": {"nodeName": "worker-3"},
  "status": {"phase": "Running", "conditions": [
    {"type": "Ready", "status": "False", "reason": "NodeNotReady"}]}}"#;

/// A world served by what each request asks for: the node, a pod, a Service, a pod list.
#[derive(Default)]
struct World {
    answers: Vec<(&'static str, String)>,
    asked: std::sync::Mutex<Vec<String>>,
}

impl World {
    fn with(mut self, what: &'static str, text: &str) -> Self {
        self.answers.push((what, text.to_string()));
        self
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl EvidenceSource for World {
    async fn fetch(&self, request: CapabilityRequest) -> crate::tools::Fetched {
        let what = match &request {
            CapabilityRequest::ObjectGet { kind, .. } if kind == "Node" => "node",
            CapabilityRequest::ObjectGet { kind, .. } if kind == "Service" => "service",
            CapabilityRequest::PodDescribe { .. } => "pod",
            CapabilityRequest::PodList { .. } => "pods",
            _ => "other",
        };
        self.asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(what.to_string());
        let capability = request.capability();
        match self.answers.iter().find(|(w, _)| *w == what) {
            Some((_, text)) => crate::tools::Fetched::Found(crate::tools::ToolOutput {
                capability,
                server: "lab".into(),
                tool: "get".into(),
                args: serde_json::Value::Null,
                text: text.clone(),
                fetched_at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
                cached: false,
            }),
            None => crate::tools::Fetched::Missing(crate::evidence::MissingEvidence {
                capability,
                reason: "not served".into(),
            }),
        }
    }
}

fn pod_alert(name: &str) -> firstline_alert::AlertTarget {
    parse_alert(&format!(
        "[FIRING:1] {name} (shop orders-api-6f7c9d8b5-q2w3e)\n*Details:*\n  \
         • *alertname:* `{name}`\n  • *cluster:* `prod`\n  • *namespace:* `shop`\n  \
         • *pod:* `orders-api-6f7c9d8b5-q2w3e`"
    ))
}

fn lost_node() -> Sharing {
    Sharing::PodsOnNode {
        node: "worker-3".into(),
        cluster: Some("prod".into()),
    }
}

#[tokio::test]
async fn a_pod_not_ready_on_the_lost_node_shares_its_root_for_two_reads() {
    let world = World::default()
        .with("node", NODE_LOST)
        .with("pod", POD_ON_LOST_NODE);
    let evidence = shares(&world, &pod_alert("KubePodNotReady"), &lost_node())
        .await
        .expect("shared");
    assert!(
        evidence.contains("`shop/orders-api-6f7c9d8b5-q2w3e` is not ready on node `worker-3`")
            && evidence.contains("still Ready=Unknown"),
        "{evidence}"
    );
    assert_eq!(world.asked(), ["node", "pod"]);
}

#[tokio::test]
async fn what_a_lost_node_does_not_explain_is_never_shared() {
    let world = World::default()
        .with("node", NODE_LOST)
        .with("pod", POD_ON_LOST_NODE);
    // A crash loop or an OOM kill on that node is its own incident: nothing is even read.
    for own in ["KubePodCrashLooping", "KubeContainerOOMKilled"] {
        assert_eq!(shares(&world, &pod_alert(own), &lost_node()).await, None);
    }
    assert!(world.asked().is_empty(), "{:?}", world.asked());
    // Another cluster's node of the same name.
    let elsewhere = Sharing::PodsOnNode {
        node: "worker-3".into(),
        cluster: Some("staging".into()),
    };
    assert_eq!(
        shares(&world, &pod_alert("KubePodNotReady"), &elsewhere).await,
        None
    );
    // The node came back.
    let back = World::default()
        .with("node", &NODE_LOST.replace("\"Unknown\"", "\"True\""))
        .with("pod", POD_ON_LOST_NODE);
    assert_eq!(
        shares(&back, &pod_alert("KubePodNotReady"), &lost_node()).await,
        None
    );
    // The pod is ready, or runs elsewhere, or cannot be read.
    for pod in [
        POD_ON_LOST_NODE.replace("\"False\"", "\"True\""),
        POD_ON_LOST_NODE.replace("\"worker-3\"", "\"worker-7\""),
    ] {
        let world = World::default().with("node", NODE_LOST).with("pod", &pod);
        assert_eq!(
            shares(&world, &pod_alert("KubePodNotReady"), &lost_node()).await,
            None
        );
    }
    let unread = World::default().with("node", NODE_LOST);
    assert_eq!(
        shares(&unread, &pod_alert("KubePodNotReady"), &lost_node()).await,
        None
    );
}

#[tokio::test]
async fn an_alert_naming_the_lost_node_shares_it_once_the_node_is_read() {
    let node_alert = parse_alert(
        "[FIRING:1] KubeNodeUnreachable\n*Details:*\n  • *alertname:* `KubeNodeUnreachable`\n  \
         • *node:* `worker-3`",
    );
    let world = World::default().with("node", NODE_LOST);
    let evidence = shares(&world, &node_alert, &lost_node())
        .await
        .expect("shared");
    assert!(
        evidence.contains("the alert names node `worker-3`"),
        "{evidence}"
    );
    assert_eq!(world.asked(), ["node"]);
    let unnamed = parse_alert("[FIRING:1] Watchdog\n*Details:*\n  • *alertname:* `Watchdog`");
    let nothing = World::default().with("node", NODE_LOST);
    assert_eq!(shares(&nothing, &unnamed, &lost_node()).await, None);
    assert!(nothing.asked().is_empty());
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
    assert!(root.evidence.starts_with('\u{201c}'), "{}", root.evidence);
    assert_eq!(
        root.sharing, None,
        "a config error is not shared by what runs beside it"
    );
}

#[tokio::test]
async fn a_services_target_down_shares_the_root_only_when_its_pods_down_are_all_on_the_node() {
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
    let target_down = parse_alert(
        "[FIRING:1] TargetDown (shop redis-sessions-metrics)\n*Details:*\n  \
         • *alertname:* `TargetDown`\n  • *job:* `redis-sessions-metrics`\n  \
         • *namespace:* `shop`\n  • *service:* `redis-sessions-metrics`",
    );
    let world = World::default()
        .with("node", NODE_LOST)
        .with("service", service)
        .with("pods", pods);
    let evidence = shares(&world, &target_down, &lost_node())
        .await
        .expect("shared");
    assert!(
        evidence.contains("redis-sessions-1") && evidence.contains("behind Service"),
        "{evidence}"
    );
    assert_eq!(world.asked(), ["node", "service", "pods"]);
    // A replica down on another node too: something else is wrong as well.
    let also_elsewhere = pods.replace(r#""status": "True""#, r#""status": "False""#);
    let world = World::default()
        .with("node", NODE_LOST)
        .with("service", service)
        .with("pods", &also_elsewhere);
    assert_eq!(shares(&world, &target_down, &lost_node()).await, None);
}

#[tokio::test]
async fn recall_shows_a_past_storm_as_one_incident_with_its_alert_count() {
    let source = Arc::new(crash_loop_world());
    let mut done = run(&source, CRASH_ALERT).await;
    let past = |alert_count| crate::prior::PriorIncident {
        incident: firstline_store::incidents::PastIncident {
            id: 7,
            title: "node worker-3 lost".into(),
            summary: String::new(),
            root_cause: "the kubelet stopped".into(),
            resolution: "replaced the machine".into(),
            permalink: None,
            alertname: Some("KubeNodeNotReady".into()),
            service: None,
            namespace: None,
            resolved_at: chrono::DateTime::from_timestamp(1_764_000_000, 0).expect("a time"),
            alert_count,
        },
        score: 0.03,
        similarity: None,
        matched_on: vec!["alertname".into()],
    };
    let report = done.report.as_mut().expect("a report");
    report.similar = vec![past(30)];
    let text = render_markdown(&done);
    assert!(text.contains("(30 alerts, matched on alertname)"), "{text}");
    done.report.as_mut().expect("a report").similar = vec![past(1)];
    let text = render_markdown(&done);
    assert!(text.contains("(matched on alertname)"), "{text}");
}
