//! Pods the scheduler cannot place: `FailedScheduling` and the reasons in its message
//! ("0/5 nodes are available: 3 Insufficient memory, 2 node(s) had untolerated taint …").
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`Unschedulable`] | cause; consequence when every reason is a lost node's taint or an unbound claim | the scheduler reports it |
//!
//! A pod Pending on `node.kubernetes.io/unreachable` or `not-ready` is waiting for a node that
//! was lost: the node explains it (`nodes.rs`), and giving the pod a toleration would be the
//! wrong fix. A FailedScheduling event from before the pod was scheduled is superseded
//! (`standing.rs`).

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::finding::in_pod;
use super::lead::Lead;
use super::text::{event_time, matching_line, object_name, quote_from};
use super::{
    Confidence, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom, cite,
};

static UNSCHEDULABLE: LazyLock<Regex> = regex!(
    r"(?i)\bFailedScheduling\b|\d+/\d+ nodes are available|didn't match (?:pod's )?node (?:affinity|selector)|untolerated taint|(?-i:\bInsufficient) [a-z./-]+|unbound immediate PersistentVolumeClaims|volume node affinity conflict"
);
static NODES_AVAILABLE: LazyLock<Regex> = regex!(r"\d+/\d+ nodes are available");
static INSUFFICIENT: LazyLock<Regex> = regex!(r"\bInsufficient ([A-Za-z./-]+)");
static TAINT: LazyLock<Regex> = regex!(r"untolerated taint\(?s?\)? ?(\{([^:}]*)[^}]*\})?");

/// Taints the node lifecycle controller puts on a node it lost.
const NODE_LOST_TAINTS: [&str; 2] = [
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/not-ready",
];

/// One reason the scheduler gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SchedulingReason {
    /// Not enough of a resource (`memory`, `cpu`, `nvidia.com/gpu`).
    Insufficient { resource: String },
    /// Nodes carry a taint the pod does not tolerate (`{dedicated: gpu}`).
    Taint {
        taint: Option<String>,
        key: Option<String>,
    },
    /// No node matches the pod's node selector or affinity.
    Affinity,
    /// A claim the pod mounts is not bound.
    UnboundClaim,
    /// A volume the pod mounts is pinned to a zone or node (its PersistentVolume's node
    /// affinity) that no node fit for the pod is in: `volume node affinity conflict`.
    VolumeZone,
}

impl SchedulingReason {
    fn words(&self) -> String {
        match self {
            SchedulingReason::Insufficient { resource } => format!("insufficient {resource}"),
            SchedulingReason::Taint { taint, .. } => format!(
                "untolerated taint{}",
                taint
                    .as_deref()
                    .map(|t| format!(" {t}"))
                    .unwrap_or_default()
            ),
            SchedulingReason::Affinity => "no node matches the pod's node selector/affinity".into(),
            SchedulingReason::UnboundClaim => "unbound PersistentVolumeClaim".into(),
            SchedulingReason::VolumeZone => {
                "its volume is pinned to a zone no node fit for it is in (volume node affinity \
                 conflict)"
                    .into()
            }
        }
    }

    /// The taint of a node that was lost (unreachable, not ready).
    pub fn is_node_lost(&self) -> bool {
        matches!(self, SchedulingReason::Taint { key: Some(key), .. }
            if NODE_LOST_TAINTS.contains(&key.trim()))
    }
}

/// A pod the scheduler cannot place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unschedulable {
    pub pod: Option<String>,
    pub reasons: Vec<SchedulingReason>,
}

impl Unschedulable {
    /// The pod waits for something else: a lost node (see [`Self::waits_for_lost_node`]), or
    /// claims that do not bind.
    pub fn only_follows(&self) -> bool {
        self.waits_for_lost_node()
            || (!self.reasons.is_empty()
                && self
                    .reasons
                    .iter()
                    .all(|r| *r == SchedulingReason::UnboundClaim))
    }

    /// The pod waits for a node that was lost: a lost node's taint is the only reason the
    /// scheduler gives besides the pod's own selector or affinity, or its volume's (which rule
    /// other nodes out by design: a volume pinned to the lost node's zone waits for it too).
    /// Another reason (insufficient memory elsewhere) is a cause of its own.
    pub fn waits_for_lost_node(&self) -> bool {
        self.reasons.iter().any(SchedulingReason::is_node_lost)
            && self.reasons.iter().all(|r| {
                r.is_node_lost()
                    || matches!(r, SchedulingReason::Affinity | SchedulingReason::VolumeZone)
            })
    }

    pub fn waits_for_claim(&self) -> bool {
        self.reasons.contains(&SchedulingReason::UnboundClaim)
    }

    fn why(&self) -> String {
        if self.reasons.is_empty() {
            "the scheduler found no node for it".to_string()
        } else {
            self.reasons
                .iter()
                .map(SchedulingReason::words)
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

impl Payload for Unschedulable {
    const SPEC: KindSpec = KindSpec {
        name: "unschedulable",
        role: Role::Cause,
        verified_when: "the scheduler reports FailedScheduling with its reasons",
        accounts_for: &[Symptom::Unavailable, Symptom::JobFailed],
    };

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            reasons: vec![SchedulingReason::Insufficient {
                resource: "memory".into(),
            }],
        }
    }

    fn title(&self) -> String {
        format!("Pod unschedulable: {}", self.why())
    }

    fn detail(&self) -> String {
        let mut detail = format!(
            "The pod{} cannot be scheduled: {}.",
            in_pod(self.pod.as_deref()),
            self.why()
        );
        if self.waits_for_lost_node() {
            detail.push_str(
                " Those taints are what the node lifecycle controller puts on a node it lost: \
                 the pod waits for that node, not for a toleration.",
            );
        }
        detail
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn role(&self) -> Role {
        Role::cause_unless_it_follows(self.only_follows())
    }

    fn step(&self, scene: &Scene) -> String {
        let ns = &scene.namespace;
        let pod = self
            .pod
            .as_deref()
            .or(scene.pod.as_deref())
            .unwrap_or("<pod>");
        if self.waits_for_lost_node() {
            return "Bring back the node the pod waits for (`kubectl get nodes`: the NotReady one), \
                    or drain it so its pods are placed elsewhere; the unreachable taint is the \
                    node's state, not something for the pod to tolerate."
                .to_string();
        }
        let taint = self
            .reasons
            .iter()
            .any(|r| matches!(r, SchedulingReason::Taint { .. }));
        let insufficient = self
            .reasons
            .iter()
            .any(|r| matches!(r, SchedulingReason::Insufficient { .. }));
        if insufficient {
            format!(
                "Make room for the pod: add node capacity or lower its requests \
                 (`kubectl -n {ns} describe pod {pod}` names what is insufficient)."
            )
        } else if self.reasons.contains(&SchedulingReason::VolumeZone) {
            format!(
                "Find the zone its volume is pinned to (`kubectl get pv -o \
                 custom-columns=NAME:.metadata.name,CLAIM:.spec.claimRef.name,ZONE:.spec.nodeAffinity`) \
                 and why no node fit for the pod is there now (that zone's node group, its size \
                 limits, the autoscaler's events for `{pod}`); bring one back or move the data."
            )
        } else if self.waits_for_claim() {
            format!(
                "Fix the pod's volume claim first: `kubectl -n {ns} describe pvc` shows why it \
                 does not bind."
            )
        } else if self.reasons.contains(&SchedulingReason::Affinity) {
            format!(
                "Fix the pod's node selector / affinity or label the nodes it expects \
                 (`kubectl -n {ns} describe pod {pod}`)."
            )
        } else if taint {
            format!(
                "Give the pod a toleration for the taint the scheduler names, or schedule it \
                 elsewhere (`kubectl -n {ns} describe pod {pod}` lists the taints)."
            )
        } else {
            format!(
                "See why no node fits: `kubectl -n {ns} describe pod {pod}` names what the \
                 scheduler rejected."
            )
        }
    }
    /// The nodes a lost node's taint keeps the pod off: which ones, and why they were lost.
    fn leads(&self) -> Vec<Lead> {
        self.reasons
            .iter()
            .filter(|r| r.is_node_lost())
            .filter_map(|r| match r {
                SchedulingReason::Taint { key: Some(key), .. } => Some(Lead::NodesTainted {
                    key: key.trim().to_string(),
                }),
                _ => None,
            })
            .collect()
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (evidence, ctx) in round.structural() {
        let lines: Vec<&str> = evidence.excerpt.lines().collect();
        let Some(index) = matching_line(&lines, &NODES_AVAILABLE)
            .or_else(|| matching_line(&lines, &UNSCHEDULABLE))
        else {
            continue;
        };
        let line = lines[index];
        let mut reasons: Vec<SchedulingReason> = INSUFFICIENT
            .captures_iter(line)
            .map(|c| SchedulingReason::Insufficient {
                resource: c[1].trim_end_matches(['.', ',', ';']).to_string(),
            })
            .collect();
        let lower = line.to_ascii_lowercase();
        // `volume node affinity conflict` is the volume's zone, not the pod's own affinity.
        let pods_own = lower.replace("volume node affinity conflict", "");
        if pods_own.contains("node affinity") || pods_own.contains("node selector") {
            reasons.push(SchedulingReason::Affinity);
        }
        if lower.contains("volume node affinity conflict") {
            reasons.push(SchedulingReason::VolumeZone);
        }
        for c in TAINT.captures_iter(line) {
            reasons.push(SchedulingReason::Taint {
                taint: c.get(1).map(|m| m.as_str().to_string()),
                key: c.get(2).map(|m| m.as_str().trim().to_string()),
            });
        }
        if lower.contains("persistentvolumeclaim") {
            reasons.push(SchedulingReason::UnboundClaim);
        }
        reasons.dedup();
        let start = UNSCHEDULABLE.find(line).map_or(0, |m| {
            NODES_AVAILABLE.find(line).map_or(m.start(), |n| n.start())
        });
        let pod = object_name(evidence).or_else(|| ctx.default_resource.clone());
        let mut finding = Finding::new(Unschedulable { pod, reasons }, Confidence::High, true)
            .dated(event_time(&lines, index, evidence.fetched_at));
        finding.refs.push(cite(evidence, quote_from(line, start)));
        out.push(finding);
    }
    out
}

#[cfg(test)]
mod tests;
