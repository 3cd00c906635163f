//! Nodes in trouble, from their own objects: not Ready (with the event that names the node,
//! not a neighbour's), and under disk pressure.

use super::*;
use crate::detectors::testing::{
    assert_ends_with, ctx, detect, event, event_list, events, find, has, object, quotes, utc,
};
use crate::detectors::{DetectionContext, Kind};

#[test]
fn a_not_ready_node_cites_the_event_that_names_it() {
    let node = "\
apiVersion: v1
kind: Node
metadata:
  name: worker-eu-1b-5
spec:
  taints:
  - effect: NoSchedule
    key: node.kubernetes.io/unreachable
status:
  conditions:
  - lastHeartbeatTime: \"2025-03-04T13:44:00Z\"
    message: Kubelet stopped posting node status.
    reason: NodeStatusUnknown
    status: Unknown
    type: Ready
";
    let status_now = |node: &str, status: &str, at: &str| {
        event(
            "Normal",
            status,
            &format!("Node/{node}"),
            "default",
            &format!("'Node {node} status is now: {status}'"),
            at,
        )
    };
    let list = event_list(&[
        status_now("worker-eu-1a-2", "NodeReady", "13:40:00"),
        status_now("worker-eu-1b-5", "NodeNotReady", "13:44:00"),
    ]);
    let findings = detect(&[object(1, "Node", node), events(2, &list)], &ctx());
    let not_ready = find(&findings, Kind::NodeNotReady);
    assert!(not_ready.verified);
    assert_eq!(not_ready.resource().as_deref(), Some("worker-eu-1b-5"));
    assert_eq!(
        not_ready.title(),
        "Node `worker-eu-1b-5` is NotReady (status unknown: the kubelet stopped posting status)"
    );
    assert_ends_with(
        &not_ready.detail(),
        "Kubernetes reports: Node worker-eu-1b-5 status is now: NodeNotReady",
    );
    assert_eq!(
        not_ready.refs[1].quote,
        "Message: 'Node worker-eu-1b-5 status is now: NodeNotReady'"
    );
    assert!(
        quotes(not_ready)
            .iter()
            .all(|q| !q.contains("worker-eu-1a-2")),
        "{:#?}",
        not_ready.refs
    );
}

const DISK_PRESSURE_NODE: &str = "\
apiVersion: v1
kind: Node
metadata:
  name: worker-eu-1a-4
status:
  conditions:
  - lastHeartbeatTime: \"2025-03-04T13:59:10Z\"
    lastTransitionTime: \"2025-03-04T13:51:40Z\"
    message: kubelet has disk pressure
    reason: KubeletHasDiskPressure
    status: \"True\"
    type: DiskPressure
  - lastHeartbeatTime: \"2025-03-04T13:59:10Z\"
    lastTransitionTime: \"2025-02-20T08:00:00Z\"
    message: kubelet is posting ready status
    reason: KubeletReady
    status: \"True\"
    type: Ready
";

#[test]
fn a_node_objects_disk_pressure_is_node_pressure() {
    let findings = detect(&[object(1, "Node", DISK_PRESSURE_NODE)], &ctx());
    let pressure = find(&findings, Kind::NodePressure);
    assert!(pressure.verified);
    assert_eq!(pressure.title(), "Node `worker-eu-1a-4` has DiskPressure");
    let Fact::NodePressure(p) = &pressure.fact else {
        panic!("{pressure:#?}");
    };
    assert_eq!(p.pressure, Pressure::DiskPressure);
    assert_eq!(pressure.role(), Role::Cause);
    assert_eq!(pressure.at, Some(utc("2025-03-04T13:51:40Z")));
    assert!(!has(&findings, Kind::NodeNotReady), "it is Ready");

    // Under an alert about that node's disk, the condition only restates the alert.
    let alert = DetectionContext {
        alert_node: Some("worker-eu-1a-4".into()),
        symptom: Symptom::Node,
        ..ctx()
    };
    let findings = detect(&[object(1, "Node", DISK_PRESSURE_NODE)], &alert);
    assert_eq!(find(&findings, Kind::NodePressure).role(), Role::Symptom);
}
