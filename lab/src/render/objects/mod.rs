//! The Kubernetes object model: a scenario's world as the API server would return it (JSON
//! values shaped like real objects: `metadata`, `spec`, `status`, `ownerReferences`,
//! `conditions`), with stable made-up names, hashes, uids and addresses. The MCP tools print
//! these as YAML; the fake Kubernetes API serves them as JSON.
//!
//! One module per kind family; [`kinds`] is the table of every served kind (apiVersion, kind,
//! REST resource, scope, builder) that both the tools and the fake API look kinds up in;
//! `versions` stamps what writes left on each object (resourceVersion, applied annotations).

mod autoscaling;
mod batch;
mod config;
mod deployments;
mod disruption;
mod events;
mod ingress;
pub mod kinds;
mod network;
mod network_policy;
mod nodes;
mod pods;
mod revisions;
mod storage;
mod versions;
mod workloads;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use super::world::World;
use crate::scenario::ConditionSpec;

pub(crate) use deployments::replica_sets;
pub(crate) use events::event_object;
pub use kinds::{KINDS, Kind};
pub use nodes::KUBELET_VERSION;
pub(crate) use pods::{init_finished, pod_active, pod_object, pod_ready};
pub(crate) use versions::{key_of, stamp};
pub(crate) use workloads::{daemonset_object, statefulset_object};

pub(crate) fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A short, stable, Kubernetes-looking hash (pod-template-hash alphabet).
pub(crate) fn k8s_hash(seed: &str, len: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut out = String::new();
    for round in 0..len {
        for b in seed.bytes().chain([round as u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push(ALPHABET[(h % ALPHABET.len() as u64) as usize] as char);
    }
    out
}

/// The uid of an object of the kinds added after Pods, ReplicaSets and Deployments (those keep
/// the uids they always had).
pub(crate) fn uid(kind: &str, namespace: &str, name: &str) -> String {
    k8s_hash(&format!("uid/{kind}/{namespace}/{name}"), 16)
}

/// The apiVersion of a kind the lab serves (`v1` for the core kinds and anything else).
pub(crate) fn api_version_of(kind: &str) -> &'static str {
    KINDS
        .iter()
        .find(|k| k.kind == kind)
        .map_or("v1", |k| k.api_version)
}

/// Whether objects of a kind live in a namespace (kinds the lab does not serve are assumed to).
pub(crate) fn namespaced(kind: &str) -> bool {
    KINDS
        .iter()
        .find(|k| k.kind == kind)
        .is_none_or(|k| k.namespaced)
}

/// The `metadata.uid` the lab gives an object of a kind (Pods, ReplicaSets and Deployments
/// keep the uids they always had; cluster-scoped objects have no namespace in theirs).
pub(crate) fn object_uid(kind: &str, namespace: &str, name: &str) -> String {
    match kind {
        "Pod" => k8s_hash(&format!("pod/{name}"), 16),
        "Deployment" | "ReplicaSet" => k8s_hash(&format!("uid/{name}"), 16),
        _ if !namespaced(kind) => uid(kind, "", name),
        _ => uid(kind, namespace, name),
    }
}

/// An `ownerReferences` entry naming the controller.
pub(crate) fn controller_ref(kind: &str, name: &str, uid: &str) -> Value {
    json!({
        "apiVersion": api_version_of(kind), "kind": kind, "name": name,
        "controller": true, "blockOwnerDeletion": true, "uid": uid,
    })
}

/// Conditions as Kubernetes lists them: `lastTransitionTime` (and each of `also`, e.g.
/// `lastUpdateTime`) is the condition's `at`, or the alert time.
pub(crate) fn conditions(world: &World, specs: &[ConditionSpec], also: &[&str]) -> Vec<Value> {
    specs
        .iter()
        .map(|c| {
            let mut m = Map::new();
            m.insert("type".into(), json!(c.kind));
            m.insert("status".into(), json!(c.status));
            if let Some(r) = &c.reason {
                m.insert("reason".into(), json!(r));
            }
            if let Some(msg) = &c.message {
                m.insert("message".into(), json!(msg));
            }
            let at = json!(rfc3339(world.time_or(c.at, chrono::Duration::zero())));
            for key in std::iter::once(&"lastTransitionTime").chain(also) {
                m.insert((*key).into(), at.clone());
            }
            Value::Object(m)
        })
        .collect()
}

/// A condition made up by the lab (a default; `status` is `True`, `False` or `Unknown`).
pub(crate) fn condition(kind: &str, status: &str, reason: &str, message: &str) -> ConditionSpec {
    ConditionSpec {
        kind: kind.into(),
        status: status.into(),
        reason: (!reason.is_empty()).then(|| reason.into()),
        message: (!message.is_empty()).then(|| message.into()),
        at: None,
    }
}

/// Inserts `value` under `key` unless it is `None` (Kubernetes omits unset fields).
pub(crate) fn insert_some<T: serde::Serialize>(
    map: &mut Map<String, Value>,
    key: &str,
    value: Option<T>,
) {
    if let Some(value) = value {
        map.insert(key.into(), json!(value));
    }
}

/// Counts as Kubernetes serves them: zero is omitted (`omitempty`).
pub(crate) fn insert_count(map: &mut Map<String, Value>, key: &str, value: u32) {
    if value > 0 {
        map.insert(key.into(), json!(value));
    }
}

/// A controller's pod template containers: its first pod's (the first one with `image`, when
/// given), else one container named `fallback_name`.
pub(crate) fn template_containers(
    pods: &[&crate::scenario::PodSpec],
    image: Option<&str>,
    fallback_name: &str,
) -> Value {
    let container = |name: &str, image: Option<&str>| {
        let mut c = Map::new();
        c.insert("name".into(), json!(name));
        insert_some(&mut c, "image", image);
        Value::Object(c)
    };
    match pods.first() {
        Some(pod) => Value::Array(
            pod.containers
                .iter()
                .enumerate()
                .map(|(i, c)| container(&c.name, image.filter(|_| i == 0).or(Some(&c.image))))
                .collect(),
        ),
        None => Value::Array(vec![container(fallback_name, image)]),
    }
}

/// A controller's pod template spec: its containers ([`template_containers`]) and the pod-level
/// fields its first pod sets (`tolerations`, `nodeSelector`, `affinity`, `hostNetwork`, …), so
/// the controller's spec says what its pods were made from.
pub(crate) fn template_spec(
    pods: &[&crate::scenario::PodSpec],
    image: Option<&str>,
    fallback_name: &str,
) -> Value {
    let mut spec = Map::new();
    if let Some(pod) = pods.first() {
        for (key, value) in &pod.spec_extra {
            spec.insert(key.clone(), value.clone());
        }
    }
    spec.insert(
        "containers".into(),
        template_containers(pods, image, fallback_name),
    );
    Value::Object(spec)
}
