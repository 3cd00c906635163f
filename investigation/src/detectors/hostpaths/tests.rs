//! What writes to a node's disk: a pod on the node whose disk fills, writing at a verbose log
//! level to a host directory; a read-only mount (a log collector), a pod on another node, a pod
//! at its usual level, or a node whose disk is fine is no finding.

use serde_json::json;

use super::*;
use crate::detectors::testing::{assert_contains, detect, ev, find, has};
use crate::detectors::{DetectionContext, Kind, Role, Symptom};
use crate::evidence::{Capability, Evidence};

/// A pod as `pods_get` returns it (YAML).
fn pod(n: u32, name: &str, node: &str, level: &str, read_only: bool) -> Evidence {
    let text = format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: orders
spec:
  nodeName: {node}
  containers:
  - name: ingest
    image: registry.example.com/orders/order-ingest:2.3.1
    env:
    - name: LOG_LEVEL
      value: {level}
    - name: LOG_FILE
      value: /var/log/app/order-ingest.log
    volumeMounts:
    - name: app-logs
      mountPath: /var/log/app
      readOnly: {read_only}
  volumes:
  - name: app-logs
    hostPath:
      path: /var/log/order-ingest
      type: DirectoryOrCreate
status:
  phase: Running
"
    );
    ev(
        n,
        Capability::PodDescribe,
        json!({"name": name, "namespace": "orders"}),
        &text,
    )
}

/// A node-filesystem alert about `node`.
fn disk_alert(node: &str) -> DetectionContext {
    DetectionContext {
        symptom: Symptom::Storage,
        alert_node: Some(node.into()),
        ..DetectionContext::default()
    }
}

#[test]
fn a_debug_logger_writing_to_a_hostpath_on_the_full_node_is_the_cause() {
    let evidence = [pod(
        1,
        "order-ingest-6d8f9b7c5-h4xzt",
        "worker-6",
        "debug",
        false,
    )];
    let findings = detect(&evidence, &disk_alert("worker-6"));
    let writer = find(&findings, Kind::HostPathWriter);
    assert!(writer.verified);
    assert_eq!(writer.role(), Role::Cause);
    let Fact::HostPathWriter(w) = &writer.fact else {
        panic!("not a writer");
    };
    assert_eq!(w.host_path, "/var/log/order-ingest");
    assert_eq!(w.level, "debug");
    assert_eq!(w.file.as_deref(), Some("/var/log/app/order-ingest.log"));
    assert_contains(&writer.title(), "LOG_LEVEL=debug");
    assert_contains(&writer.title(), "worker-6");
}

#[test]
fn a_read_only_mount_writes_nothing() {
    // Red herring: a collector that reads the node's logs at debug level.
    let evidence = [pod(1, "fluent-bit-7xk2p", "worker-6", "debug", true)];
    assert!(!has(
        &detect(&evidence, &disk_alert("worker-6")),
        Kind::HostPathWriter
    ));
}

#[test]
fn a_pod_at_its_usual_level_or_on_another_node_is_no_finding() {
    let info = [pod(
        1,
        "order-ingest-6d8f9b7c5-h4xzt",
        "worker-6",
        "info",
        false,
    )];
    assert!(!has(
        &detect(&info, &disk_alert("worker-6")),
        Kind::HostPathWriter
    ));
    let elsewhere = [pod(
        1,
        "order-ingest-6d8f9b7c5-h4xzt",
        "worker-2",
        "debug",
        false,
    )];
    assert!(!has(
        &detect(&elsewhere, &disk_alert("worker-6")),
        Kind::HostPathWriter
    ));
}

#[test]
fn a_node_whose_disk_is_fine_has_no_writer() {
    // Negative: the same pod under an alert that is not about the node's disk.
    let evidence = [pod(
        1,
        "order-ingest-6d8f9b7c5-h4xzt",
        "worker-6",
        "debug",
        false,
    )];
    let ctx = DetectionContext {
        symptom: Symptom::Errors,
        ..DetectionContext::default()
    };
    assert!(!has(&detect(&evidence, &ctx), Kind::HostPathWriter));
}

#[test]
fn sockets_devices_and_system_paths_are_not_writes() {
    let pod = json!({
        "spec": {
            "volumes": [
                {"name": "sock", "hostPath": {"path": "/var/run/docker.sock", "type": "Socket"}},
                {"name": "kmsg", "hostPath": {"path": "/dev/kmsg", "type": "CharDevice"}},
                {"name": "data", "hostPath": {"path": "/mnt/data"}}
            ],
            "containers": [{
                "name": "agent",
                "volumeMounts": [
                    {"name": "sock", "mountPath": "/var/run/docker.sock"},
                    {"name": "kmsg", "mountPath": "/dev/kmsg"},
                    {"name": "data", "mountPath": "/data"}
                ]
            }]
        }
    });
    let writes = host_writes(&pod);
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].host_path, "/mnt/data");
}
