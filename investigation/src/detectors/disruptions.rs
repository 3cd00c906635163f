//! Pods stopped from outside: evicted by a drain or the cluster-autoscaler's scale-down (the
//! pod's `DisruptionTarget` condition, `EvictionByEvictionAPI`; a `ScaleDown` event "deleting
//! pod for node scale down"), preempted by a higher-priority pod, deleted by the taint manager,
//! or evicted by the kubelet under node pressure (`Evicted`: "The node was low on resource") or
//! for the pod's own storage limit ("exceeded its local ephemeral storage limit": the pod's
//! doing, not the node's).
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`Disrupted`] | cause; a consequence when the kubelet evicted it for node pressure | the pod's DisruptionTarget condition or the cluster's event says so |
//!
//! What explains what: a drain or a scale-down explains the SIGTERM (exit 143) the pod's
//! containers got, their teardown lines, and a Job that failed because of it; node pressure
//! explains the kubelet's evictions (`nodes.rs`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lead::Lead;
use super::text::{
    cite_values, event_blocks, event_field, event_time, looks_like_injection, quote_line,
};
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite, pod_of_job, same_pod,
};
use crate::evidence::Capability;
use crate::kube;

/// Who stopped the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disruption {
    /// The Eviction API: a drain (`kubectl drain`, a node upgrade) or the cluster-autoscaler.
    Eviction,
    /// A node autoscaler removing the node: the cluster-autoscaler's scale-down, Karpenter's
    /// consolidation or drift.
    ScaleDown,
    /// The scheduler, to make room for a higher-priority pod.
    Preemption,
    /// The taint manager, for a NoExecute taint (a lost node).
    TaintManager,
    /// The kubelet, to relieve node pressure.
    NodePressure,
    /// The kubelet, because the pod wrote more local storage than its own limit allows
    /// (`exceeded its local ephemeral storage limit`, an emptyDir over its `sizeLimit`).
    OwnLimit,
}

/// The kubelet's words when it evicts a pod for its own storage limit, not for the node.
static OWN_LIMIT: std::sync::LazyLock<regex::Regex> = regex!(
    r"(?i)exceeded its local ephemeral storage limit|ephemeral local storage usage exceeds the total limit|Usage of EmptyDir volume .* exceeds the limit"
);

impl Disruption {
    fn words(self) -> &'static str {
        match self {
            Disruption::Eviction => "evicted through the Eviction API (a drain)",
            Disruption::ScaleDown => {
                "evicted by the node autoscaler removing its node (scale-down, consolidation)"
            }
            Disruption::Preemption => "preempted to make room for a higher-priority pod",
            Disruption::TaintManager => "deleted by the taint manager (a NoExecute taint)",
            Disruption::NodePressure => "evicted by the kubelet to relieve node pressure",
            Disruption::OwnLimit => "evicted by the kubelet for exceeding its own storage limit",
        }
    }

    /// An `Evicted` event, by what it says: Karpenter disrupting the node (`Evicted pod:
    /// Disrupting Node: Consolidation/Delete`), else the kubelet — for the pod's own limit, else
    /// for node pressure.
    fn of_kubelet(says: Option<&str>) -> Self {
        if says.is_some_and(|m| m.contains("Disrupting Node")) {
            Disruption::ScaleDown
        } else if says.is_some_and(|m| OWN_LIMIT.is_match(m)) {
            Disruption::OwnLimit
        } else {
            Disruption::NodePressure
        }
    }

    /// From a DisruptionTarget condition's reason.
    fn of_condition(reason: &str) -> Self {
        match reason {
            "PreemptionByScheduler" | "PreemptionByKubeScheduler" => Disruption::Preemption,
            "DeletionByTaintManager" => Disruption::TaintManager,
            "TerminationByKubelet" => Disruption::NodePressure,
            _ => Disruption::Eviction,
        }
    }
}

/// A pod stopped from outside.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disrupted {
    pub pod: String,
    pub how: Disruption,
    /// The node it ran on.
    pub node: Option<String>,
    /// What the condition or event says.
    pub says: Option<String>,
}

impl Payload for Disrupted {
    const SPEC: KindSpec = KindSpec {
        name: "pod-disrupted",
        role: Role::Cause,
        verified_when: "the pod's DisruptionTarget condition, or an Evicted / Preempted / \
                        ScaleDown event about it",
        accounts_for: &[
            Symptom::Restarts,
            Symptom::Unavailable,
            Symptom::JobFailed,
            Symptom::Errors,
        ],
    };

    fn example() -> Self {
        Self {
            pod: "ledger-reconcile-29087415-q8k2d".into(),
            how: Disruption::ScaleDown,
            node: Some("worker-eu-1a-4".into()),
            says: Some("deleting pod for node scale down".into()),
        }
    }

    fn title(&self) -> String {
        format!(
            "Pod `{}` was {}{}",
            self.pod,
            self.how.words(),
            self.node
                .as_deref()
                .map(|n| format!(" on node `{n}`"))
                .unwrap_or_default()
        )
    }

    fn detail(&self) -> String {
        format!(
            "Pod `{}` was {}{}: its containers got SIGTERM (exit 143) and what they logged \
             after it is teardown{}.",
            self.pod,
            self.how.words(),
            self.node
                .as_deref()
                .map(|n| format!(" on node `{n}`"))
                .unwrap_or_default(),
            self.says
                .as_deref()
                .map(|s| format!("; Kubernetes says: {s}"))
                .unwrap_or_default()
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Pod, self.pod.clone()))
    }

    fn role(&self) -> Role {
        Role::cause_unless_it_follows(self.how == Disruption::NodePressure)
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.pod == other.pod
    }

    fn merge_from(&mut self, other: &Self) {
        self.node = self.node.take().or_else(|| other.node.clone());
        self.says = self.says.take().or_else(|| other.says.clone());
        if self.how == Disruption::Eviction && other.how != Disruption::Eviction {
            self.how = other.how;
        }
    }

    fn step(&self, scene: &Scene) -> String {
        let node = self.node.as_deref().unwrap_or("<node>");
        match self.how {
            Disruption::ScaleDown | Disruption::Eviction => format!(
                "Nothing in the pod failed: it was evicted from `{node}`. Protect work that must \
                 not be interrupted (a PodDisruptionBudget, the pod annotation \
                 `cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\"` for Jobs, or a Job \
                 `backoffLimit` above 0) and re-run it (`kubectl -n {} create job --from=...`).",
                scene.namespace
            ),
            Disruption::Preemption => format!(
                "Check the pod's priority against what preempted it (`kubectl -n {} get pod {} \
                 -o jsonpath='{{.spec.priorityClassName}}'`) and whether the cluster has room \
                 for both.",
                scene.namespace, self.pod
            ),
            Disruption::TaintManager => format!(
                "Check node `{node}`'s NoExecute taints (`kubectl describe node {node}`): the \
                 node was lost or tainted, the pod did nothing wrong."
            ),
            Disruption::NodePressure => format!(
                "Relieve node `{node}`: find the pods using most of the resource under pressure \
                 (`kubectl top pods -A --sort-by=memory`) and fix or move them."
            ),
            Disruption::OwnLimit => format!(
                "Find what the container writes to local disk (its scratch and temp files, its \
                 logs) and raise its `limits.ephemeral-storage` in {} to fit the largest work it \
                 takes, or give that directory a sized emptyDir.",
                scene.workload_ref
            ),
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        let pod = Some(self.pod.as_str());
        match &effect.fact {
            Fact::Exited(e) => e.signalled() && same_pod(pod, e.pod.as_deref()),
            Fact::CrashLine(c) => c.after_signal && same_pod(pod, c.pod.as_deref()),
            Fact::JobFailed(j) => pod_of_job(pod, j.job.as_deref()),
            Fact::WarningEvent(w) => w.object.as_deref() == Some(self.pod.as_str()),
            _ => false,
        }
    }
    /// The node a pod was evicted from or lost with: its conditions and events say why.
    fn leads(&self) -> Vec<Lead> {
        self.node
            .iter()
            .map(|name| Lead::Node { name: name.clone() })
            .collect()
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let mut out: Vec<Finding> = round
        .pods()
        .into_iter()
        .filter_map(|(evidence, pod)| condition(evidence, pod))
        .collect();
    for evidence in round.of(Capability::Events) {
        out.extend(events(evidence));
    }
    out
}

/// A pod whose DisruptionTarget condition is True.
fn condition(evidence: &crate::evidence::Evidence, pod: &Value) -> Option<Finding> {
    let name = kube::str_at(pod, "/metadata/name")?;
    let disruption = kube::conditions_of(pod)
        .into_iter()
        .find(|c| c.kind == "DisruptionTarget" && c.status == "True")?;
    let reason = disruption.reason.clone().unwrap_or_default();
    let how = match Disruption::of_condition(&reason) {
        Disruption::NodePressure => Disruption::of_kubelet(kube::str_at(pod, "/status/message")),
        how => how,
    };
    let mut f = Finding::new(
        Disrupted {
            pod: name.to_string(),
            how,
            node: kube::str_at(pod, "/spec/nodeName").map(str::to_string),
            says: Some(match &disruption.message {
                Some(m) => format!("{reason}: {m}"),
                None => reason.clone(),
            }),
        },
        Confidence::High,
        true,
    )
    .dated(
        disruption
            .since
            .as_deref()
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            .map(|t| t.with_timezone(&chrono::Utc)),
    );
    cite_values(&mut f, evidence, &[&reason, "DisruptionTarget"]);
    (!f.refs.is_empty()).then_some(f)
}

/// Eviction, preemption and scale-down events about pods.
fn events(evidence: &crate::evidence::Evidence) -> Vec<Finding> {
    let lines: Vec<&str> = evidence.excerpt.lines().collect();
    let mut out = Vec::new();
    for block in event_blocks(&lines) {
        let field = |key: &str| event_field(&block, key);
        let (Some((reason, _)), Some((kind, _)), Some((pod, _))) =
            (field("reason"), field("kind"), field("name"))
        else {
            continue;
        };
        let message = field("message");
        if kind != "Pod" || message.is_some_and(|(m, _)| looks_like_injection(m)) {
            continue;
        }
        let says = message.map(|(m, _)| m);
        let how = match reason {
            "Evicted" => Disruption::of_kubelet(says),
            "Preempted" | "Preempting" => Disruption::Preemption,
            "TaintManagerEviction" => Disruption::TaintManager,
            "ScaleDown" if says.is_some_and(|m| m.contains("deleting pod")) => {
                Disruption::ScaleDown
            }
            _ => continue,
        };
        let Some((_, line)) = message.or_else(|| field("reason")) else {
            continue;
        };
        let at = lines
            .iter()
            .position(|l| std::ptr::eq(*l, line))
            .and_then(|i| event_time(&lines, i, evidence.fetched_at));
        out.push(
            Finding::new(
                Disrupted {
                    pod: pod.to_string(),
                    how,
                    node: None,
                    says: says.map(str::to_string),
                },
                Confidence::High,
                true,
            )
            .dated(at)
            .citing(vec![cite(evidence, quote_line(line))]),
        );
    }
    out
}

#[cfg(test)]
mod tests;
