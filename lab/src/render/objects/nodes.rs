//! Nodes and Namespaces. A node's standard conditions left out are healthy (Ready True,
//! Memory/Disk/PID pressure False); a node only pods name is a plain Ready node, so scenarios
//! written before `nodes` existed keep a consistent cluster.

use chrono::Duration;
use serde_json::{Map, Value, json};

use super::{condition, conditions, rfc3339, uid};
use crate::reltime::RelTime;
use crate::render::world::World;
use crate::scenario::{ConditionSpec, NodeSpec};

/// The Kubernetes version nodes report by default (the fake API's `/version` too).
pub const KUBELET_VERSION: &str = "v1.31.4";

/// The healthy value of each standard condition type.
fn healthy(kind: &str) -> ConditionSpec {
    match kind {
        "Ready" => condition(
            kind,
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        ),
        "MemoryPressure" => condition(
            kind,
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        "DiskPressure" => condition(
            kind,
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        _ => condition(
            kind,
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
    }
}

/// A stable made-up node address in 10.0.0.0/16 (also its pods' `hostIP`).
pub(crate) fn internal_ip(name: &str) -> String {
    let h = name
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    format!("10.0.{}.{}", (h >> 8) % 256, h % 254 + 1)
}

/// The Node object of a listed node, or of a node only pods name (`spec` `None`).
pub(crate) fn node_object(world: &World, name: &str, spec: Option<&NodeSpec>) -> Value {
    let created = world.scenario.alert_at - Duration::days(60);
    let default = |kind: &str| ConditionSpec {
        at: Some(RelTime::Absolute(created)),
        ..healthy(kind)
    };
    let given: &[ConditionSpec] = spec.map_or(&[], |n| &n.conditions);
    let mut stated: Vec<ConditionSpec> = ["MemoryPressure", "DiskPressure", "PIDPressure"]
        .into_iter()
        .filter(|kind| !given.iter().any(|c| c.kind == *kind))
        .map(default)
        .collect();
    stated.extend(given.iter().cloned());
    if !given.iter().any(|c| c.kind == "Ready") {
        stated.push(default("Ready"));
    }
    let mut labels = spec.map(|n| n.labels.clone()).unwrap_or_default();
    for (k, v) in [
        ("kubernetes.io/hostname", name),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
    ] {
        labels.entry(k.into()).or_insert_with(|| v.into());
    }
    let mut node_spec = Map::new();
    let mut status = Map::new();
    if let Some(node) = spec {
        if !node.taints.is_empty() {
            node_spec.insert("taints".into(), json!(node.taints));
        }
        if node.unschedulable {
            node_spec.insert("unschedulable".into(), json!(true));
        }
        if !node.capacity.is_empty() {
            status.insert("capacity".into(), json!(node.capacity));
        }
        if !node.allocatable.is_empty() {
            status.insert("allocatable".into(), json!(node.allocatable));
        }
    }
    status.insert(
        "conditions".into(),
        Value::Array(conditions(world, &stated, &["lastHeartbeatTime"])),
    );
    status.insert(
        "addresses".into(),
        json!([{"type": "InternalIP", "address": internal_ip(name)}, {"type": "Hostname", "address": name}]),
    );
    status.insert(
        "nodeInfo".into(),
        json!({
            "kubeletVersion": spec.and_then(|n| n.kubelet_version.as_deref()).unwrap_or(KUBELET_VERSION),
            "containerRuntimeVersion": "containerd://1.7.23",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "osImage": "Ubuntu 22.04.5 LTS",
        }),
    );
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": uid("Node", "", name),
            "creationTimestamp": rfc3339(created),
            "labels": labels,
        },
        "spec": node_spec,
        "status": status,
    })
}

/// Every node: the listed ones, then the ones only pods name.
pub(crate) fn nodes(world: &World) -> Vec<Value> {
    world
        .node_names()
        .iter()
        .map(|name| {
            let spec = world.spec.nodes.iter().find(|n| &n.name == name);
            node_object(world, name, spec)
        })
        .collect()
}

/// A Namespace (all are Active).
pub(crate) fn namespace_object(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}
