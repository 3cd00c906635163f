//! Full disks: a node's disk pressure as `kubectl describe` prints it, a pod evicted for
//! ephemeral storage, an application's "no space left on device"; and what is not one (a
//! toleration, a condition that is False).

use serde_json::json;

use super::*;
use crate::detectors::testing::{
    DESCRIBE_EXIT_78, ctx, describe, detect, ev, events, find, has, previous_log,
};
use crate::detectors::{DetectionContext, Kind};
use crate::evidence::Capability;

#[test]
fn disk_pressure_in_describe_yaml_and_logs() {
    // A node's description is text, not a Node object: the kubelet's condition row is read as
    // a full disk. (A Node object's DiskPressure condition is a `NodePressure`: `nodes`.)
    let node = "\
Name:               node-1
Conditions:
  Type             Status  Reason                       Message
  MemoryPressure   False   KubeletHasSufficientMemory   kubelet has sufficient memory available
  DiskPressure     True    KubeletHasDiskPressure       kubelet has disk pressure
";
    let findings = detect(
        &[ev(
            1,
            Capability::Other("nodes_get".into()),
            json!({}),
            node,
        )],
        &ctx(),
    );
    let full = find(&findings, Kind::DiskFull);
    assert!(full.verified);
    assert_eq!(full.role(), Role::Cause);

    let evicted = "- message: 'The node was low on resource: ephemeral-storage. Container api was using 10Gi, request is 0.'\n  reason: Evicted\n  type: Warning\n";
    let findings = detect(&[events(1, evicted)], &ctx());
    assert!(find(&findings, Kind::DiskFull).verified);

    let evidence = [
        describe(1, DESCRIBE_EXIT_78),
        previous_log(2, "write /var/lib/data/wal.log: no space left on device\n"),
    ];
    let findings = detect(&evidence, &ctx());
    let full = find(&findings, Kind::DiskFull);
    assert!(full.verified);
    assert_eq!(full.title(), "Out of disk space (no space left on device)");
    assert!(full.explains(find(&findings, Kind::CrashLoop)));
}

#[test]
fn a_node_filling_up_restated_by_the_kubelet_is_a_consequence() {
    // The alert is the node's disk filling: the kubelet's eviction only restates it.
    let evicted = "- message: 'The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 7839412Ki.'\n  reason: Evicted\n  type: Warning\n";
    let alert = DetectionContext {
        alert_node: Some("worker-eu-1a-4".into()),
        symptom: Symptom::Node,
        ..ctx()
    };
    let findings = detect(&[events(1, evicted)], &alert);
    assert_eq!(find(&findings, Kind::DiskFull).role(), Role::Consequence);
}

#[test]
fn healthy_node_and_tolerations_are_not_disk_pressure() {
    let description = "\
Name:  payments-api-7d9f8c6b5-x2k4q
Tolerations:                 node.kubernetes.io/disk-pressure:NoSchedule op=Exists
  DiskPressure     False   KubeletHasNoDiskPressure     kubelet has no disk pressure
";
    let findings = detect(&[describe(1, description)], &ctx());
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn a_pods_yaml_toleration_is_not_disk_pressure() {
    let pod = "\
apiVersion: v1
kind: Pod
metadata:
  name: node-exporter-2vq7m
spec:
  tolerations:
  - effect: NoSchedule
    key: node.kubernetes.io/disk-pressure
    operator: Exists
status:
  phase: Running
";
    let findings = detect(&[describe(1, pod)], &ctx());
    assert!(!has(&findings, Kind::DiskFull), "{findings:#?}");
}
