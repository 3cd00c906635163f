//! A DaemonSet's tolerations read against the nodes' taints: the tainted nodes it skips, not the
//! ones its defaults or an `Exists` toleration cover, nor those its nodeSelector leaves out; a
//! cause only while the DaemonSet itself reports every pod it wants ready.

use serde_json::json;

use crate::detectors::testing::{assert_contains, ctx, detect, ev, find, has};
use crate::detectors::{Kind, Role};
use crate::evidence::{Capability, Evidence};

/// Node `name` with `taints` (`key=value:Effect`), as `resources_list` lists nodes.
fn node(name: &str, taints: &[(&str, &str, &str)], labels: &str) -> String {
    let taints = if taints.is_empty() {
        String::new()
    } else {
        let items: String = taints
            .iter()
            .map(|(k, v, e)| format!("    - effect: {e}\n      key: {k}\n      value: '{v}'\n"))
            .collect();
        format!("    taints:\n{items}")
    };
    format!(
        "- apiVersion: v1\n  kind: Node\n  metadata:\n    labels:\n      {labels}\n    name: {name}\n  spec:\n{taints}    podCIDR: 10.244.0.0/24\n  status:\n    conditions:\n    - status: 'True'\n      type: Ready\n"
    )
}

fn nodes() -> Evidence {
    ev(
        1,
        Capability::ObjectList,
        json!({"kind": "Node"}),
        &[
            node("worker-1", &[], "pool: general"),
            node(
                "worker-2",
                &[("dedicated", "infra", "NoSchedule")],
                "pool: infra",
            ),
            node(
                "gpu-1",
                &[("nvidia.com/gpu", "true", "NoSchedule")],
                "pool: gpu",
            ),
            node(
                "gpu-2",
                &[("nvidia.com/gpu", "true", "NoSchedule")],
                "pool: gpu",
            ),
            // Cordoned: every DaemonSet tolerates that.
            node(
                "worker-3",
                &[("node.kubernetes.io/unschedulable", "", "NoSchedule")],
                "pool: general",
            ),
        ]
        .concat(),
    )
}

fn daemonset(tolerations: &str, node_selector: &str, ready: u32) -> Evidence {
    ev(
        2,
        Capability::ObjectGet,
        json!({"kind": "DaemonSet", "namespace": "monitoring", "name": "node-exporter"}),
        &format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: node-exporter\n  namespace: monitoring\nspec:\n  template:\n    spec:\n{node_selector}      tolerations:\n{tolerations}      containers:\n      - name: node-exporter\nstatus:\n  desiredNumberScheduled: 3\n  numberAvailable: {ready}\n  numberReady: {ready}\n"
        ),
    )
}

const INFRA_ONLY: &str = "      - effect: NoSchedule\n        key: dedicated\n        operator: Equal\n        value: infra\n";

#[test]
fn tainted_nodes_no_toleration_covers_get_no_pod() {
    let findings = detect(&[nodes(), daemonset(INFRA_ONLY, "", 3)], &ctx());
    let skips = find(&findings, Kind::DaemonSetSkipsNodes);
    assert_eq!(
        skips.title(),
        "DaemonSet `node-exporter` does not tolerate taint `nvidia.com/gpu=true:NoSchedule`: 2 \
         nodes (`gpu-1`, `gpu-2`) get no pod of it"
    );
    assert!(skips.is_verified_cause());
    assert_contains(&skips.detail(), "tolerates `dedicated=infra`");
    assert_eq!(
        crate::detectors::testing::quotes(skips),
        ["key: nvidia.com/gpu", "tolerations:"]
    );
    // The infra taint is tolerated, the cordon is a default: one finding only.
    assert_eq!(
        findings
            .iter()
            .filter(|f| f.kind() == Kind::DaemonSetSkipsNodes)
            .count(),
        1
    );
}

#[test]
fn an_exists_toleration_or_a_node_selector_leaves_no_gap() {
    let exists = "      - operator: Exists\n";
    assert!(!has(
        &detect(&[nodes(), daemonset(exists, "", 3)], &ctx()),
        Kind::DaemonSetSkipsNodes
    ));
    // Meant for the general pool only: the GPU nodes are out of its design, not a gap.
    let general = "      nodeSelector:\n        pool: general\n";
    assert!(!has(
        &detect(&[nodes(), daemonset(INFRA_ONLY, general, 3)], &ctx()),
        Kind::DaemonSetSkipsNodes
    ));
}

#[test]
fn with_pods_of_its_own_failing_the_gap_is_context() {
    let findings = detect(&[nodes(), daemonset(INFRA_ONLY, "", 1)], &ctx());
    let skips = find(&findings, Kind::DaemonSetSkipsNodes);
    assert_eq!(skips.role(), Role::Context);
    assert!(!skips.is_verified_cause());
}
