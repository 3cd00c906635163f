//! Nodes a DaemonSet leaves without its pod because of its own spec: a taint its pod template
//! does not tolerate. Nothing fails — the controller simply does not count those nodes, so its
//! desired and ready numbers agree — which is why only the spec, read against the nodes, shows
//! it.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`DaemonSetSkipsNodes`] | cause while the DaemonSet reports every pod it wants ready (else context: its failing pods are the story) | the DaemonSet and the nodes were read this round, and a node's `NoSchedule`/`NoExecute` taint is tolerated by none of the template's tolerations |
//!
//! Taints every DaemonSet pod tolerates by default (not-ready, unreachable, pressure,
//! unschedulable, network-unavailable) and nodes the template's `nodeSelector` excludes are not
//! counted: those are the controller's design, not a gap.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Confidence, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom, cite,
};
use crate::kube;

/// Taints the DaemonSet controller tolerates on every pod it creates.
const DEFAULT_TOLERATED: &[&str] = &[
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/network-unavailable",
];
/// Nodes a finding names before "and N more".
const NAMED_NODES: usize = 4;

/// A DaemonSet whose pods do not tolerate a taint some nodes carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonSetSkipsNodes {
    pub daemonset: String,
    /// The taint, as `key=value:Effect` (or `key:Effect`).
    pub taint: String,
    pub key: String,
    /// The nodes carrying it.
    pub nodes: Vec<String>,
    /// The template's tolerations, as `key` (or `key=value`), for the report.
    pub tolerates: Vec<String>,
    /// The DaemonSet reports every pod it wants ready: the nodes it does not count are the
    /// only gap there is.
    pub otherwise_complete: bool,
}

impl Payload for DaemonSetSkipsNodes {
    const SPEC: KindSpec = KindSpec {
        name: "daemonset-skips-tainted-nodes",
        role: Role::Cause,
        verified_when: "the DaemonSet and the nodes were read this round and a NoSchedule or \
                        NoExecute taint of the nodes is tolerated by none of its pod template's \
                        tolerations",
        accounts_for: &[Symptom::Unavailable, Symptom::Node],
    };

    fn example() -> Self {
        Self {
            daemonset: "node-exporter".into(),
            taint: "nvidia.com/gpu=true:NoSchedule".into(),
            key: "nvidia.com/gpu".into(),
            nodes: vec!["gpu-us-1a-1".into(), "gpu-us-1b-1".into()],
            tolerates: vec!["dedicated=infra".into()],
            otherwise_complete: true,
        }
    }

    fn title(&self) -> String {
        let n = self.nodes.len();
        let nodes = if n == 1 { "node" } else { "nodes" };
        format!(
            "DaemonSet `{}` does not tolerate taint `{}`: {n} {nodes} ({}) get no pod of it",
            self.daemonset,
            self.taint,
            listed(&self.nodes)
        )
    }

    fn detail(&self) -> String {
        let tolerates = if self.tolerates.is_empty() {
            "none beyond the controller's defaults".to_string()
        } else {
            self.tolerates
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "Its pod template tolerates {tolerates}; nodes {} carry `{}`, so the DaemonSet \
             controller does not count them and creates no pod there — nothing fails, and its \
             desired and ready numbers agree.",
            listed(&self.nodes),
            self.taint
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Workload, self.daemonset.clone()))
    }

    fn role(&self) -> Role {
        if self.otherwise_complete {
            Role::Cause
        } else {
            Role::Context
        }
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.daemonset == other.daemonset && self.taint == other.taint
    }

    fn step(&self, scene: &Scene) -> String {
        format!(
            "Add a toleration for `{}` to DaemonSet `{}`'s pod template (`kubectl -n {} edit \
             daemonset {}`, or the chart's tolerations value; `operator: Exists` tolerates \
             every taint), if its pods belong on those nodes.",
            self.key, self.daemonset, scene.namespace, self.daemonset
        )
    }
}

fn listed(nodes: &[String]) -> String {
    let more = nodes.len().saturating_sub(NAMED_NODES);
    let mut shown: Vec<String> = nodes
        .iter()
        .take(NAMED_NODES)
        .map(|n| format!("`{n}`"))
        .collect();
    if more > 0 {
        shown.push(format!("and {more} more"));
    }
    shown.join(", ")
}

/// One taint of a node.
struct Taint<'a> {
    key: &'a str,
    value: Option<&'a str>,
    effect: &'a str,
}

impl Taint<'_> {
    fn text(&self) -> String {
        match self.value {
            Some(value) => format!("{}={value}:{}", self.key, self.effect),
            None => format!("{}:{}", self.key, self.effect),
        }
    }

    /// Whether `toleration` (a pod spec's) tolerates it.
    fn tolerated_by(&self, toleration: &Value) -> bool {
        let key = kube::str_at(toleration, "/key");
        let exists = kube::str_at(toleration, "/operator") == Some("Exists");
        let effect_ok = kube::str_at(toleration, "/effect").is_none_or(|e| e == self.effect);
        let key_ok = match key {
            None | Some("") => exists,
            Some(key) => key == self.key,
        };
        let value_ok = exists || kube::str_at(toleration, "/value") == self.value;
        effect_ok && key_ok && value_ok
    }
}

fn taints(node: &Value) -> Vec<Taint<'_>> {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            Some(Taint {
                key: kube::str_at(t, "/key")?,
                value: kube::str_at(t, "/value"),
                effect: kube::str_at(t, "/effect")?,
            })
        })
        .filter(|t| matches!(t.effect, "NoSchedule" | "NoExecute"))
        .filter(|t| !DEFAULT_TOLERATED.contains(&t.key))
        .collect()
}

/// Whether `node` matches the template's `nodeSelector` (none: every node).
fn selected(node: &Value, selector: Option<&Value>) -> bool {
    let Some(selector) = selector.and_then(Value::as_object) else {
        return true;
    };
    selector.iter().all(|(key, wanted)| {
        node.pointer("/metadata/labels")
            .and_then(|l| l.get(key))
            .is_some_and(|v| v == wanted)
    })
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let nodes = round.objects("Node");
    if nodes.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Finding> = Vec::new();
    for (evidence, daemonset) in round.objects("DaemonSet") {
        let Some(name) = kube::str_at(daemonset, "/metadata/name") else {
            continue;
        };
        let template = daemonset.pointer("/spec/template/spec");
        let tolerations: Vec<&Value> = template
            .and_then(|t| t.get("tolerations"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        let selector = template.and_then(|t| t.get("nodeSelector"));
        let count = |path: &str| daemonset.pointer(path).and_then(Value::as_u64);
        let desired = count("/status/desiredNumberScheduled");
        let otherwise_complete = desired.is_some_and(|d| d > 0)
            && count("/status/numberReady") == desired
            && count("/status/numberAvailable") == desired;
        // Untolerated taint → the nodes carrying it, and the evidence of one of them.
        let mut skipped: Vec<(String, String, Vec<String>, &crate::evidence::Evidence)> =
            Vec::new();
        for (node_evidence, node) in &nodes {
            let Some(node_name) = kube::str_at(node, "/metadata/name") else {
                continue;
            };
            if !selected(node, selector) {
                continue;
            }
            for taint in taints(node) {
                if tolerations.iter().any(|t| taint.tolerated_by(t)) {
                    continue;
                }
                let text = taint.text();
                match skipped.iter_mut().find(|(t, ..)| *t == text) {
                    Some((_, _, names, _)) => {
                        if !names.iter().any(|n| n == node_name) {
                            names.push(node_name.to_string());
                        }
                    }
                    None => skipped.push((
                        text,
                        taint.key.to_string(),
                        vec![node_name.to_string()],
                        node_evidence,
                    )),
                }
            }
        }
        for (taint, key, names, node_evidence) in skipped {
            let tolerates: Vec<String> = tolerations
                .iter()
                .filter_map(|t| {
                    let key = kube::str_at(t, "/key")?;
                    Some(match kube::str_at(t, "/value") {
                        Some(value) => format!("{key}={value}"),
                        None => key.to_string(),
                    })
                })
                .filter(|k| !DEFAULT_TOLERATED.iter().any(|d| k.starts_with(d)))
                .collect();
            let mut refs = Vec::new();
            if let Some(line) = node_evidence
                .excerpt
                .lines()
                .find(|l| l.contains(&key) && l.contains("key"))
            {
                refs.push(cite(node_evidence, super::text::quote_line(line)));
            }
            if let Some(line) = evidence
                .excerpt
                .lines()
                .find(|l| l.trim_start().starts_with("tolerations:"))
                .or_else(|| {
                    evidence
                        .excerpt
                        .lines()
                        .find(|l| l.contains("kind: DaemonSet"))
                })
            {
                refs.push(cite(evidence, super::text::quote_line(line)));
            }
            out.push(
                Finding::new(
                    DaemonSetSkipsNodes {
                        daemonset: name.to_string(),
                        taint,
                        key,
                        nodes: names,
                        tolerates,
                        otherwise_complete,
                    },
                    Confidence::High,
                    true,
                )
                .citing(refs),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests;
