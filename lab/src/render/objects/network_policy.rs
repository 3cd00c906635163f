//! networking.k8s.io/v1 NetworkPolicies: the pod selector, the policy types (defaulted as the
//! API server defaults them) and the ingress / egress rules verbatim. NetworkPolicies have no
//! status.

use chrono::Duration;
use serde_json::{Map, Value, json};

use super::{rfc3339, uid};
use crate::render::world::World;
use crate::scenario::NetworkPolicySpec;

/// The NetworkPolicy object.
pub(crate) fn network_policy_object(world: &World, policy: &NetworkPolicySpec) -> Value {
    let mut spec = Map::new();
    // An empty selector selects every pod of the namespace; the API server serves it as `{}`.
    let selector = if policy.pod_selector.is_empty() {
        json!({})
    } else {
        json!({"matchLabels": policy.pod_selector})
    };
    spec.insert("podSelector".into(), selector);
    spec.insert("policyTypes".into(), json!(policy.policy_types()));
    // No rules of a type means nothing is allowed; the API server omits the empty list.
    if !policy.ingress.is_empty() {
        spec.insert("ingress".into(), json!(policy.ingress));
    }
    if !policy.egress.is_empty() {
        spec.insert("egress".into(), json!(policy.egress));
    }
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": policy.name,
            "namespace": policy.namespace,
            "uid": uid("NetworkPolicy", &policy.namespace, &policy.name),
            "generation": 1,
            "creationTimestamp": rfc3339(world.scenario.alert_at - Duration::days(30)),
        },
        "spec": spec,
    })
}
