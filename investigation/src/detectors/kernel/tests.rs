//! A node's kernel faults, from its journal as a log store answers a query for the node's
//! streams (newest first): a GPU lost by its driver, the conntrack table full; a container's own
//! memory-cgroup kill and an application's log are not node faults; and two failing pods on a
//! node whose kernel reports a fault locate the failure there.

use serde_json::json;

use super::*;
use crate::detectors::testing::{assert_contains, ctx, detect, ev, find, has};
use crate::detectors::{Kind, Role};

/// A log store's answer for `{node="<node>"}`: `lines` as (unit, line), newest first.
fn journal(n: u32, node: &str, lines: &[(&str, &str)]) -> Evidence {
    let entries: Vec<serde_json::Value> = lines
        .iter()
        .enumerate()
        .map(|(i, (unit, line))| {
            json!({
                "labels": {"job": "systemd-journal", "node": node, "unit": unit},
                "line": line,
                "timestamp": format!("{}", 1_741_096_800_000_000_000_u64 - i as u64 * 60_000_000_000),
            })
        })
        .collect();
    ev(
        n,
        Capability::LogQuery,
        json!({"datasourceUid": "loki", "logql": format!("{{node=\"{node}\"}}"), "limit": 50}),
        &serde_json::to_string(&entries).expect("json"),
    )
}

#[test]
fn a_gpu_the_driver_lost_is_the_nodes_fault_quoted_by_its_xid() {
    let evidence = journal(
        1,
        "gpu-g5-1c-2",
        &[
            (
                "kernel",
                "NVRM: GPU 0000:00:1e.0: RmInitAdapter failed! (0x26:0x65:1463)",
            ),
            (
                "kernel",
                "NVRM: GPU 0000:00:1e.0: GPU has fallen off the bus.",
            ),
            (
                "kernel",
                "NVRM: Xid (PCI:0000:00:1e): 79, pid=1882342, name=python, GPU has fallen off the bus.",
            ),
            (
                "kubelet",
                "I0304 13:00:00.000000 1412 server.go:487] \"Kubelet version\"",
            ),
        ],
    );
    let findings = detect(&[evidence], &ctx());
    let fault = find(&findings, Kind::KernelFault);
    assert_eq!(
        fault.title(),
        "Node `gpu-g5-1c-2`'s kernel reports a GPU fault (NVIDIA Xid): `NVRM: Xid \
         (PCI:0000:00:1e): 79, pid=1882342, name=python, GPU has fallen off the bus.`"
    );
    assert!(fault.is_verified_cause());
    assert_eq!(fault.role(), Role::Cause);
    assert_contains(&fault.detail(), "2 times in the window read");
    let scene = crate::detectors::Scene {
        namespace: "ml-batch".into(),
        pod: None,
        workload: Some("embeddings-backfill-v3".into()),
        container: None,
        workload_ref: "job/embeddings-backfill-v3".into(),
        when: "around 14:02 UTC".into(),
        headline: true,
    };
    assert_contains(&fault.step(&scene), "kubectl cordon gpu-g5-1c-2");
}

#[test]
fn a_full_conntrack_table_is_a_fault_a_containers_cgroup_kill_is_not() {
    let evidence = journal(
        1,
        "worker-7",
        &[
            (
                "kernel",
                "nf_conntrack: nf_conntrack: table full, dropping packet",
            ),
            ("kernel", "net_ratelimit: 3490 callbacks suppressed"),
            (
                "kernel",
                "Memory cgroup out of memory: Killed process 2240012 (java) total-vm:52479104kB",
            ),
        ],
    );
    let findings = detect(&[evidence], &ctx());
    let faults: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.kind() == Kind::KernelFault)
        .collect();
    assert_eq!(faults.len(), 1, "{findings:#?}");
    assert_contains(&faults[0].title(), "connection-tracking table full");

    // The same words in an application's log query are not a node's journal.
    let app = ev(
        2,
        Capability::LogQuery,
        json!({"logql": "{namespace=\"shop\"} |= \"error\""}),
        r#"[{"labels":{"namespace":"shop"},"line":"GPU has fallen off the bus","timestamp":"1"}]"#,
    );
    assert!(!has(&detect(&[app], &ctx()), Kind::KernelFault));
}

/// A pod of Deployment `api` on `node`, crash-looping or healthy, as a pod list holds it.
fn pod(suffix: &str, node: &str, failing: bool) -> String {
    let (ready, restarts, state) = if failing {
        ("false", 6, "waiting:\n          reason: CrashLoopBackOff")
    } else {
        (
            "true",
            0,
            "running:\n          startedAt: 2025-03-01T10:00:00Z",
        )
    };
    format!(
        "\
- apiVersion: v1
  kind: Pod
  metadata:
    labels:
      pod-template-hash: 7d9f8c6b5
    name: api-7d9f8c6b5-{suffix}
    namespace: shop
    ownerReferences:
    - kind: ReplicaSet
      name: api-7d9f8c6b5
  spec:
    nodeName: {node}
  status:
    containerStatuses:
    - name: api
      ready: {ready}
      restartCount: {restarts}
      state:
        {state}
    phase: Running
"
    )
}

#[test]
fn two_failing_pods_on_a_node_whose_kernel_faults_locate_the_failure_there() {
    let pods = ev(
        1,
        Capability::PodList,
        json!({"namespace": "shop", "labelSelector": "app=api"}),
        &[
            pod("x2k4q", "worker-7", true),
            pod("h8r2m", "worker-7", true),
            pod("b4n6c", "worker-1", false),
        ]
        .concat(),
    );
    let without = detect(std::slice::from_ref(&pods), &ctx());
    assert!(!find(&without, Kind::SharedByFailing).verified);

    let kernel = journal(
        2,
        "worker-7",
        &[(
            "kernel",
            "nf_conntrack: nf_conntrack: table full, dropping packet",
        )],
    );
    let findings = detect(&[pods, kernel], &ctx());
    let shared = find(&findings, Kind::SharedByFailing);
    assert!(shared.is_verified_cause(), "{shared:#?}");
    let fault = find(&findings, Kind::KernelFault);
    assert!(fault.explains(shared));
    // The fault heads the story, the located failure under it.
    let explanation = crate::explain::explain(&findings, crate::detectors::Symptom::Any);
    let headline = explanation.headline().expect("a chain");
    assert_eq!(headline.cause.kind(), Kind::KernelFault);
    assert!(
        headline
            .explained
            .iter()
            .any(|f| f.kind() == Kind::SharedByFailing)
    );
}

#[test]
fn a_full_conntrack_table_explains_timeouts_from_a_pod_on_the_node_not_refusals() {
    let fault = Finding::new(
        KernelFault {
            node: "worker-7".into(),
            fault: Fault::ConntrackFull,
            line: "nf_conntrack: nf_conntrack: table full, dropping packet".into(),
            lines: 3,
        },
        crate::detectors::Confidence::High,
        true,
    );
    let call = |node: &str, says: &str| {
        Finding::new(
            crate::detectors::dependencies::Dependency {
                pod: Some("api-7d9f8c6b5-x2k4q".into()),
                endpoint: Some("10.96.44.12:5432".into()),
                failure: crate::detectors::dependencies::DependencyFailure::Connect,
                count: 3,
                says: says.into(),
                peer_ready: None,
                peer_namespace: None,
                node: Some(node.into()),
                client_side: true,
            },
            crate::detectors::Confidence::Medium,
            true,
        )
    };
    assert!(fault.explains(&call("worker-7", "dial tcp 10.96.44.12:5432: i/o timeout")));
    // Another node's pod, or a refusal (an answer), is not the dropped packets.
    assert!(!fault.explains(&call("worker-2", "dial tcp 10.96.44.12:5432: i/o timeout")));
    assert!(!fault.explains(&call(
        "worker-7",
        "dial tcp 10.96.44.12:5432: connect: connection refused"
    )));
}
