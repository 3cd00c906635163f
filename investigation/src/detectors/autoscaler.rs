//! Autoscalers at their maximum, from their HorizontalPodAutoscaler objects: current replicas
//! at `maxReplicas`, or `ScalingLimited` (it wants more than it may have).
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`AutoscalerMaxed`] | consequence; a cause when its own spec pins it (`minReplicas` = `maxReplicas`) | the HPA runs at its maximum or reports ScalingLimited |
//!
//! An autoscaler at its maximum is what rising load per pod leads to — more traffic, or each
//! request held longer by a slow dependency or a lock — never the cause itself: load growth
//! (`steps.rs`) explains it. One whose minimum is its maximum cannot scale at all: that spec is
//! why load it could have absorbed saturates its pods. It caps capacity in turn: it explains the
//! CPU throttling of its target's pods and the scale-up it made.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::text::cite_values;
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    same_pod,
};
use crate::kube;

/// An autoscaler at its maximum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoscalerMaxed {
    pub hpa: String,
    /// Its scale target (`storefront-web`).
    pub target: Option<String>,
    pub max: u64,
    pub current: u64,
    /// What it would scale to if it could.
    pub desired: Option<u64>,
    /// The ScalingLimited condition's reason (`TooManyReplicas`).
    pub limited: Option<String>,
    /// What it scales on and where that stands, in words.
    pub scales_on: Vec<String>,
    /// The resources it scales on (`CPU`, `memory`).
    #[serde(default)]
    pub resources: Vec<String>,
    /// Its `minReplicas` equals its `maxReplicas`: it cannot scale at all.
    #[serde(default)]
    pub pinned: bool,
}

impl Payload for AutoscalerMaxed {
    const SPEC: KindSpec = KindSpec {
        name: "autoscaler-maxed",
        role: Role::Consequence,
        verified_when: "the HPA's current replicas equal maxReplicas, or it reports \
                        ScalingLimited",
        accounts_for: &[Symptom::Saturation, Symptom::Latency, Symptom::Errors],
    };

    fn example() -> Self {
        Self {
            hpa: "api".into(),
            target: Some("api".into()),
            max: 10,
            current: 10,
            desired: Some(14),
            limited: Some("TooManyReplicas".into()),
            scales_on: Vec::new(),
            resources: vec!["CPU".into()],
            pinned: false,
        }
    }

    fn title(&self) -> String {
        if self.pinned {
            return format!(
                "Autoscaler `{}` cannot scale: its minReplicas and maxReplicas are both {}{}",
                self.hpa,
                self.max,
                self.limited
                    .as_deref()
                    .map_or(String::new(), |r| format!(" (ScalingLimited: {r})"))
            );
        }
        let wants = self
            .desired
            .filter(|d| *d > self.max)
            .map(|d| format!(" (it wants {d})"))
            .unwrap_or_default();
        let on = if self.resources.is_empty() {
            String::new()
        } else {
            format!(", scaling on {}", self.resources.join(" and "))
        };
        format!(
            "Autoscaler `{}` is at its maximum of {} replicas{wants}{on}",
            self.hpa, self.max
        )
    }

    fn detail(&self) -> String {
        format!(
            "HorizontalPodAutoscaler `{}` runs {} of at most {} replicas of `{}`{}: the load it \
             scales on is more than {} replicas can carry.{}",
            self.hpa,
            self.current,
            self.max,
            self.target.as_deref().unwrap_or("its target"),
            self.limited
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
            self.max,
            self.scales_on
                .iter()
                .map(|m| format!(" {m}"))
                .collect::<String>()
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(
            ObjectKind::Workload,
            self.target.clone().unwrap_or_else(|| self.hpa.clone()),
        ))
    }

    fn role(&self) -> Role {
        Role::cause_unless_it_follows(!self.pinned)
    }

    fn step(&self, scene: &Scene) -> String {
        if self.pinned {
            return format!(
                "Give autoscaler `{}` room to scale: raise its maxReplicas above its minReplicas \
                 ({}) — `kubectl -n {} edit hpa {}`, or the values that set them.",
                self.hpa, self.max, scene.namespace, self.hpa
            );
        }
        format!(
            "Find why the load per pod rose (traffic, a slow dependency, a regression) and, if \
             the cluster has room, raise the autoscaler's maxReplicas for {}.",
            self.target
                .as_deref()
                .map_or(scene.workload_ref.clone(), |t| format!("`{t}`"))
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        let target = self.target.as_deref().unwrap_or(&self.hpa);
        match &effect.fact {
            Fact::ScaleChange(s) => same_pod(s.deployment.as_deref(), Some(target)),
            Fact::CpuThrottling(t) => same_pod(t.pod.as_deref(), Some(target)),
            _ => false,
        }
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    round
        .objects("HorizontalPodAutoscaler")
        .into_iter()
        .filter_map(|(evidence, object)| autoscaler(evidence, object))
        .collect()
}

fn autoscaler(evidence: &crate::evidence::Evidence, object: &Value) -> Option<Finding> {
    let name = kube::str_at(object, "/metadata/name")?;
    let count = |path: &str| object.pointer(path).and_then(Value::as_u64);
    let (max, current) = (
        count("/spec/maxReplicas")?,
        count("/status/currentReplicas")?,
    );
    let limited = kube::conditions_of(object)
        .into_iter()
        .find(|c| c.kind == "ScalingLimited" && c.status == "True");
    if current < max && limited.is_none() {
        return None;
    }
    let limited_reason = limited.and_then(|c| c.reason);
    let mut f = Finding::new(
        AutoscalerMaxed {
            hpa: name.to_string(),
            target: kube::str_at(object, "/spec/scaleTargetRef/name").map(str::to_string),
            max,
            current,
            desired: count("/status/desiredReplicas"),
            limited: limited_reason.clone(),
            scales_on: scaling_metrics(object),
            pinned: count("/spec/minReplicas") == Some(max),
            resources: object
                .pointer("/spec/metrics")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|m| kube::str_at(m, "/resource/name"))
                .map(|r| {
                    if r == "cpu" {
                        "CPU".to_string()
                    } else {
                        r.to_string()
                    }
                })
                .collect(),
        },
        Confidence::Medium,
        true,
    );
    // Pinned, its minimum is the line that says why; else how many it runs.
    let second = if count("/spec/minReplicas") == Some(max) {
        format!("minReplicas: {max}")
    } else {
        format!("currentReplicas: {current}")
    };
    cite_values(
        &mut f,
        evidence,
        &[
            &format!("maxReplicas: {max}"),
            &second,
            limited_reason.as_deref().unwrap_or(""),
        ],
    );
    (!f.refs.is_empty()).then_some(f)
}

/// What an autoscaler scales on and where it stands: "It scales on CPU: 96 % of requests
/// against a target of 70 %."
fn scaling_metrics(hpa: &Value) -> Vec<String> {
    let current = hpa
        .pointer("/status/currentMetrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    hpa.pointer("/spec/metrics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|metric| {
            let resource = kube::str_at(metric, "/resource/name")?;
            let target = metric
                .pointer("/resource/target/averageUtilization")
                .and_then(Value::as_u64);
            let now = current
                .iter()
                .find(|c| kube::str_at(c, "/resource/name") == Some(resource))
                .and_then(|c| c.pointer("/resource/current/averageUtilization"))
                .and_then(Value::as_u64);
            let what = if resource == "cpu" {
                "CPU".to_string()
            } else {
                resource.to_string()
            };
            Some(match (now, target) {
                (Some(now), Some(target)) => format!(
                    "It scales on {what}: {now} % of requests against a target of {target} %."
                ),
                (None, Some(target)) => {
                    format!("It scales on {what}, with a target of {target} % of requests.")
                }
                _ => format!("It scales on {what}."),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
