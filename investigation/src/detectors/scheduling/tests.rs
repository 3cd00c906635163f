//! Pods the scheduler cannot place, with its reasons, and what only looks like it.

use super::*;
use crate::detectors::Kind;
use crate::detectors::testing::{
    assert_contains, ctx, describe, detect, detect_kind, events, has, object,
};
use crate::evidence::Evidence;

/// The alert's pod, described: Pending, the scheduler's warning `age` ago saying `message`.
fn pending(age: &str, message: &str) -> Evidence {
    describe(
        1,
        &format!(
            "\
Name:             payments-api-7d9f8c6b5-x2k4q
Status:           Pending
Events:
  Warning  FailedScheduling  {age}  default-scheduler  {message}
"
        ),
    )
}

#[test]
fn unschedulable_reasons() {
    let f = detect_kind(
        &[pending(
            "12s",
            "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient memory. preemption: 0/3 nodes are available.",
        )],
        Kind::Unschedulable,
    );
    assert!(f.verified);
    assert_eq!(f.role(), Role::Cause);
    assert_contains(&f.title(), "insufficient memory");
    assert_contains(
        &f.title(),
        "untolerated taint {node-role.kubernetes.io/control-plane: }",
    );

    let yaml = "\
- involvedObject:
    kind: Pod
    name: payments-api-7d9f8c6b5-x2k4q
  message: '0/5 nodes are available: 5 node(s) didn''t match Pod''s node affinity/selector.'
  reason: FailedScheduling
  type: Warning
";
    let f = detect_kind(&[events(1, yaml)], Kind::Unschedulable);
    assert_contains(&f.title(), "node selector/affinity");
}

#[test]
fn a_pod_waiting_for_a_lost_node_is_a_consequence() {
    let f = detect_kind(
        &[pending(
            "40s",
            "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available.",
        )],
        Kind::Unschedulable,
    );
    assert_eq!(f.role(), Role::Consequence);
    assert_contains(&f.detail(), "the pod waits for that node");
}

#[test]
fn a_node_under_memory_pressure_is_not_an_unschedulable_pod() {
    // The kubelet's condition message says "insufficient" in lower case; the scheduler's
    // "Insufficient memory" is capitalised.
    let node = "\
apiVersion: v1
kind: Node
metadata:
  name: worker-1
status:
  conditions:
  - message: kubelet has insufficient memory available
    reason: KubeletHasInsufficientMemory
    status: \"True\"
    type: MemoryPressure
  - message: kubelet has insufficient PID available
    reason: KubeletHasInsufficientPID
    status: \"True\"
    type: PIDPressure
  - status: \"True\"
    type: Ready
";
    let findings = detect(&[object(1, "Node", node)], &ctx());
    assert!(!has(&findings, Kind::Unschedulable), "{findings:#?}");
    assert_eq!(findings[0].kind(), Kind::NodePressure);
    assert_eq!(findings[0].title(), "Node `worker-1` has MemoryPressure");
}

#[test]
fn a_volume_pinned_to_another_zone_is_not_the_pods_own_affinity() {
    let f = detect_kind(
        &[pending(
            "4h",
            "0/6 nodes are available: 2 node(s) had volume node affinity conflict, 4 node(s) didn't match Pod's node affinity/selector. preemption: 0/6 nodes are available.",
        )],
        Kind::Unschedulable,
    );
    assert_contains(&f.title(), "pinned to a zone");
    let crate::detectors::Fact::Unschedulable(u) = &f.fact else {
        panic!("{f:#?}");
    };
    assert!(u.reasons.contains(&SchedulingReason::VolumeZone));
    // The pod's own selector ruled the other nodes out: both are said.
    assert!(u.reasons.contains(&SchedulingReason::Affinity));
    let only_volume = detect_kind(
        &[pending(
            "4h",
            "0/2 nodes are available: 2 node(s) had volume node affinity conflict.",
        )],
        Kind::Unschedulable,
    );
    let crate::detectors::Fact::Unschedulable(u) = &only_volume.fact else {
        panic!("{only_volume:#?}");
    };
    assert_eq!(u.reasons, [SchedulingReason::VolumeZone]);
}
