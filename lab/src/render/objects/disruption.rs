//! policy/v1 PodDisruptionBudgets, with the status the disruption controller computes from the
//! pods the selector picks in the budget's namespace: ready ones are healthy, and — as for the
//! workloads' own status — pods a scenario does not list (fewer than a covered Deployment's or
//! StatefulSet's `replicas`, a DaemonSet's `desired`) count as healthy pods. A workload is
//! covered when one of its listed pods is selected or, listing none, when its pod template's
//! labels are. Succeeded and Failed pods are not counted.
//!
//! `minAvailable: N` expects every selected pod and desires N healthy; a percentage
//! `minAvailable`, or `maxUnavailable`, expects the covered workloads' scale (plus selected pods
//! no scaled workload owns) and rounds the percentage up, as the controller does. A stated
//! `status` replaces any count.

use std::collections::BTreeMap;

use chrono::Duration;
use serde_json::{Value, json};

use super::pods::{pod_active, pod_labels, pod_ready};
use super::workloads::{daemonset_selector, statefulset_selector};
use super::{rfc3339, uid};
use crate::render::world::World;
use crate::scenario::{IntOrPercent, PodDisruptionBudgetSpec, PodSpec};

/// The four status counts.
struct Counts {
    current_healthy: u32,
    desired_healthy: u32,
    disruptions_allowed: u32,
    expected_pods: u32,
}

/// A workload that has a scale: its kind, name, scale (`None`: as many as it has pods) and the
/// labels its pod template gives.
struct Scaled<'a> {
    kind: &'static str,
    name: &'a str,
    scale: Option<u32>,
    template: BTreeMap<String, String>,
}

fn selects(budget: &PodDisruptionBudgetSpec, labels: &BTreeMap<String, String>) -> bool {
    budget
        .selector
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
}

/// The Deployments, StatefulSets and DaemonSets of a namespace.
fn scaled_workloads<'a>(world: &World<'a>, namespace: &str) -> Vec<Scaled<'a>> {
    let spec = world.spec;
    let mut out = Vec::new();
    for d in spec.deployments.iter().filter(|d| d.namespace == namespace) {
        let mut template = super::deployments::selector(d);
        template.insert(
            "pod-template-hash".into(),
            world.template_hash(d, d.revisions.len()),
        );
        out.push(Scaled {
            kind: "Deployment",
            name: &d.name,
            scale: Some(d.replicas),
            template,
        });
    }
    for s in spec
        .statefulsets
        .iter()
        .filter(|s| s.namespace == namespace)
    {
        out.push(Scaled {
            kind: "StatefulSet",
            name: &s.name,
            scale: Some(s.replicas),
            template: statefulset_selector(world, namespace, &s.name),
        });
    }
    for d in spec.daemonsets.iter().filter(|d| d.namespace == namespace) {
        out.push(Scaled {
            kind: "DaemonSet",
            name: &d.name,
            scale: d.desired,
            template: daemonset_selector(world, namespace, &d.name),
        });
    }
    out
}

/// The counts the disruption controller would compute.
fn computed(world: &World, budget: &PodDisruptionBudgetSpec) -> Counts {
    let ns = budget.namespace.as_str();
    let selected: Vec<&PodSpec> = world
        .spec
        .pods
        .iter()
        .filter(|p| p.namespace == ns && pod_active(p))
        .filter(|p| selects(budget, &pod_labels(world, p)))
        .collect();
    let is_selected = |pod: &PodSpec| selected.iter().any(|s| std::ptr::eq(*s, pod));
    let healthy = selected.iter().filter(|p| pod_ready(p)).count() as u32;
    let (mut scale, mut unlisted, mut scaled_selected) = (0u32, 0u32, 0u32);
    for workload in scaled_workloads(world, ns) {
        let owned: Vec<&PodSpec> = world
            .pods_of(workload.kind, ns, workload.name)
            .into_iter()
            .filter(|p| pod_active(p))
            .collect();
        let matching = owned.iter().filter(|p| is_selected(p)).count() as u32;
        let covered = matching > 0 || (owned.is_empty() && selects(budget, &workload.template));
        if !covered {
            continue;
        }
        let listed = owned.len() as u32;
        let workload_scale = workload.scale.unwrap_or(listed);
        scale += workload_scale;
        unlisted += workload_scale.saturating_sub(listed);
        scaled_selected += matching;
    }
    // Selected pods no scaled workload owns (bare pods, Jobs' pods) count one each.
    scale += selected.len() as u32 - scaled_selected;
    let pods = selected.len() as u32 + unlisted;
    let (expected, desired) = match (&budget.min_available, &budget.max_unavailable) {
        (Some(IntOrPercent::Int(n)), _) => (pods, *n),
        (Some(min), _) => (scale, min.scaled(scale).unwrap_or(0)),
        (None, Some(max)) => (scale, scale.saturating_sub(max.scaled(scale).unwrap_or(0))),
        // Validation refuses a budget with neither.
        (None, None) => (pods, 0),
    };
    let current = healthy + unlisted;
    Counts {
        current_healthy: current,
        desired_healthy: desired,
        // Nothing expected allows nothing, as in the controller.
        disruptions_allowed: if expected == 0 {
            0
        } else {
            current.saturating_sub(desired)
        },
        expected_pods: expected,
    }
}

/// The counts served: the stated ones, else the computed ones.
fn counts(world: &World, budget: &PodDisruptionBudgetSpec) -> Counts {
    let computed = computed(world, budget);
    let given = budget.status.clone().unwrap_or_default();
    Counts {
        current_healthy: given.current_healthy.unwrap_or(computed.current_healthy),
        desired_healthy: given.desired_healthy.unwrap_or(computed.desired_healthy),
        disruptions_allowed: given
            .disruptions_allowed
            .unwrap_or(computed.disruptions_allowed),
        expected_pods: given.expected_pods.unwrap_or(computed.expected_pods),
    }
}

fn int_or_percent(value: &IntOrPercent) -> Value {
    match value {
        IntOrPercent::Int(n) => json!(n),
        IntOrPercent::Percent(p) => json!(p),
    }
}

/// The PodDisruptionBudget object.
pub(crate) fn budget_object(world: &World, budget: &PodDisruptionBudgetSpec) -> Value {
    let counts = counts(world, budget);
    let mut spec = serde_json::Map::new();
    // An empty selector selects every pod of the namespace (policy/v1), served as `{}`.
    let selector = if budget.selector.is_empty() {
        json!({})
    } else {
        json!({"matchLabels": budget.selector})
    };
    spec.insert("selector".into(), selector);
    if let Some(min) = &budget.min_available {
        spec.insert("minAvailable".into(), int_or_percent(min));
    }
    if let Some(max) = &budget.max_unavailable {
        spec.insert("maxUnavailable".into(), int_or_percent(max));
    }
    let (status, reason) = if counts.disruptions_allowed > 0 {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    };
    json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": budget.name,
            "namespace": budget.namespace,
            "uid": uid("PodDisruptionBudget", &budget.namespace, &budget.name),
            "generation": 1,
            "creationTimestamp": rfc3339(world.scenario.alert_at - Duration::days(30)),
        },
        "spec": spec,
        "status": {
            "observedGeneration": 1,
            "currentHealthy": counts.current_healthy,
            "desiredHealthy": counts.desired_healthy,
            "disruptionsAllowed": counts.disruptions_allowed,
            "expectedPods": counts.expected_pods,
            // A metav1.Condition: `message` is required, empty here as the controller sets it.
            "conditions": [{
                "type": "DisruptionAllowed",
                "status": status,
                "reason": reason,
                "message": "",
                "observedGeneration": 1,
                "lastTransitionTime": rfc3339(world.scenario.alert_at),
            }],
        },
    })
}
