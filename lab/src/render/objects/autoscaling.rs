//! HorizontalPodAutoscalers, served as autoscaling/v2: `metrics` and `currentMetrics` verbatim,
//! replica counts defaulting to the target's.

use chrono::Duration;
use serde_json::{Map, Value, json};

use super::{api_version_of, conditions, rfc3339, uid};
use crate::render::world::World;
use crate::scenario::HorizontalPodAutoscalerSpec;

/// The target's `replicas`, when the scenario lists it.
fn target_replicas(world: &World, hpa: &HorizontalPodAutoscalerSpec) -> Option<u32> {
    let (kind, name, ns) = (&hpa.target.kind, &hpa.target.name, &hpa.namespace);
    match kind.as_str() {
        "Deployment" => world.deployment(ns, name).map(|d| d.replicas),
        "StatefulSet" => world
            .spec
            .statefulsets
            .iter()
            .find(|s| &s.name == name && &s.namespace == ns)
            .map(|s| s.replicas),
        _ => None,
    }
}

/// The HorizontalPodAutoscaler object.
pub(crate) fn hpa_object(world: &World, hpa: &HorizontalPodAutoscalerSpec) -> Value {
    let min = hpa.min_replicas.unwrap_or(1);
    let current = hpa
        .current_replicas
        .or_else(|| target_replicas(world, hpa))
        .unwrap_or(min);
    let mut spec = Map::new();
    spec.insert(
        "scaleTargetRef".into(),
        json!({"apiVersion": api_version_of(&hpa.target.kind), "kind": hpa.target.kind, "name": hpa.target.name}),
    );
    spec.insert("minReplicas".into(), json!(min));
    spec.insert("maxReplicas".into(), json!(hpa.max_replicas));
    if !hpa.metrics.is_empty() {
        spec.insert("metrics".into(), json!(hpa.metrics));
    }
    let mut status = Map::new();
    status.insert("currentReplicas".into(), json!(current));
    status.insert(
        "desiredReplicas".into(),
        json!(hpa.desired_replicas.unwrap_or(current)),
    );
    if !hpa.current_metrics.is_empty() {
        status.insert("currentMetrics".into(), json!(hpa.current_metrics));
    }
    if !hpa.conditions.is_empty() {
        status.insert(
            "conditions".into(),
            Value::Array(conditions(world, &hpa.conditions, &[])),
        );
    }
    json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": hpa.name,
            "namespace": hpa.namespace,
            "uid": uid("HorizontalPodAutoscaler", &hpa.namespace, &hpa.name),
            "creationTimestamp": rfc3339(world.scenario.alert_at - Duration::days(30)),
        },
        "spec": spec,
        "status": status,
    })
}
