//! A node whose clock is wrong, from node-exporter's time-sync metrics read for the nodes a
//! workload's pods run on (`node_timex_offset_seconds`, `node_timex_sync_status`): one node's
//! offset beyond [`MAX_OFFSET_SECS`] while the other nodes read stay in sync. Anything its pods
//! check against the time — a webhook's signed timestamp, a token's `iat`/`nbf`/`exp`, a
//! certificate's validity, a cloud API's request signature — fails there and only there.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`ClockSkew`] | cause | the node's `node_timex_offset_seconds` in the round is beyond the tolerance at its latest point, and no other node read is |
//!
//! The metric alone verifies it, never an application's words. When every node read is off by
//! the same amount, the reference is what is wrong, not one node: no finding.
//!
//! What explains what: the skew explains the error lines of the pods on its node.

use serde::{Deserialize, Serialize};

use super::series::{QuotedSeries, quoted_series};
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite,
};
use crate::evidence::Capability;
use crate::kube::str_at;
use firstline_alert::timeparse::from_unix_seconds;

/// The offset beyond which a node's clock breaks what checks time (signatures, tokens,
/// certificates allow seconds to minutes; NTP keeps a node within milliseconds).
pub const MAX_OFFSET_SECS: f64 = 1.0;

/// The metric of a node's clock offset.
pub const OFFSET_METRIC: &str = "node_timex_offset_seconds";
/// The metric of whether a node's clock is synchronised (1) or not (0).
pub const SYNC_METRIC: &str = "node_timex_sync_status";

/// A node whose clock is off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockSkew {
    pub node: String,
    /// The offset at the latest point, in seconds (positive: the node runs ahead).
    pub offset_secs: f64,
    /// The other nodes read and their offsets: the baseline.
    pub others: Vec<(String, f64)>,
    /// Whether the node reports its clock unsynchronised (`node_timex_sync_status` 0).
    #[serde(default)]
    pub unsynced: Option<bool>,
    /// The pods read that run on it.
    #[serde(default)]
    pub pods: Vec<String>,
}

impl Payload for ClockSkew {
    const SPEC: KindSpec = KindSpec {
        name: "clock-skew",
        role: Role::Cause,
        verified_when: "the node's node_timex_offset_seconds in the round is beyond the \
                        tolerance at its latest point while the other nodes read are in sync",
        accounts_for: &[Symptom::Errors, Symptom::Latency, Symptom::Node],
    };

    fn example() -> Self {
        Self {
            node: "worker-eu-1c-4".into(),
            offset_secs: 412.6,
            others: vec![("worker-eu-1a-3".into(), 0.0002)],
            unsynced: Some(true),
            pods: vec!["payments-webhook-7b5c9d8f64-4kx9t".into()],
        }
    }

    fn title(&self) -> String {
        format!(
            "Node `{}`'s clock is off by {} (node_timex_offset_seconds){}",
            self.node,
            seconds(self.offset_secs),
            if self.unsynced == Some(true) {
                ", its time sync lost"
            } else {
                ""
            }
        )
    }

    fn detail(&self) -> String {
        let others = if self.others.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = self
                .others
                .iter()
                .map(|(n, o)| format!("`{n}` {}", seconds(*o)))
                .collect();
            format!(
                " while the other nodes read are in sync ({})",
                list.join(", ")
            )
        };
        let pods = if self.pods.is_empty() {
            String::new()
        } else {
            format!(
                " Pods on it ({}) fail whatever checks the time: signed timestamps, token \
                 validity, certificates.",
                self.pods
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        format!(
            "Node `{}`'s clock offset is {}{others}.{pods}",
            self.node,
            seconds(self.offset_secs)
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Node, self.node.clone()))
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.node == other.node
    }

    fn merge_from(&mut self, other: &Self) {
        if self.unsynced.is_none() {
            self.unsynced = other.unsynced;
        }
        for pod in &other.pods {
            if !self.pods.contains(pod) {
                self.pods.push(pod.clone());
            }
        }
    }

    fn step(&self, _scene: &Scene) -> String {
        format!(
            "Cordon node `{n}` (`kubectl cordon {n}`) and move its pods off it, then restore its \
             time sync (chronyd or systemd-timesyncd: `chronyc tracking`, `timedatectl` on the \
             node) and check node_timex_offset_seconds is back near 0 before uncordoning.",
            n = self.node
        )
    }

    /// The error lines of the pods on its node, and the step of its own offset series.
    fn explains(&self, effect: &Finding) -> bool {
        match &effect.fact {
            Fact::MetricStep(m) => {
                m.series.contains(OFFSET_METRIC)
                    && m.series.contains(&format!("node=\"{}\"", self.node))
            }
            Fact::ErrorLine(e) => e
                .pod
                .as_deref()
                .is_some_and(|p| self.pods.iter().any(|x| x == p)),
            _ => false,
        }
    }
}

/// `412.6 s`, `3 ms`.
fn seconds(value: f64) -> String {
    if value.abs() >= 1.0 {
        format!("{value:+.1} s")
    } else {
        format!("{:+.1} ms", value * 1000.0)
    }
}

/// The node a series is about: its `node` label, else its `instance` without the port.
fn node_of(series: &QuotedSeries<'_>) -> Option<String> {
    let labels = &series.series.labels;
    labels
        .get("node")
        .or_else(|| labels.get("nodename"))
        .cloned()
        .or_else(|| {
            labels
                .get("instance")
                .map(|i| i.split(':').next().unwrap_or(i).to_string())
        })
        .filter(|n| !n.is_empty())
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    // (node, latest offset, evidence, series)
    let mut offsets = Vec::new();
    let mut synced: Vec<(String, bool)> = Vec::new();
    for evidence in round.of(Capability::MetricRange) {
        let query = evidence
            .string_arg(&["query", "expr", "promql"])
            .unwrap_or_default();
        for series in quoted_series(&evidence.excerpt) {
            let name = series
                .series
                .labels
                .get("__name__")
                .map(String::as_str)
                .unwrap_or(query);
            let (Some(node), Some(&(t, value))) = (node_of(&series), series.series.points.last())
            else {
                continue;
            };
            if name.contains(OFFSET_METRIC) && !name.contains(SYNC_METRIC) {
                offsets.push((node, value, t, evidence, series));
            } else if name.contains(SYNC_METRIC) && !name.contains(OFFSET_METRIC) {
                synced.push((node, value >= 1.0));
            }
        }
    }
    let mut out = Vec::new();
    for (node, value, t, evidence, series) in &offsets {
        if value.abs() < MAX_OFFSET_SECS {
            continue;
        }
        let others: Vec<(String, f64)> = offsets
            .iter()
            .filter(|(n, ..)| n != node)
            .map(|(n, v, ..)| (n.clone(), *v))
            .collect();
        // Every node off alike: the reference is wrong, not this node.
        if !others.is_empty() && others.iter().all(|(_, v)| v.abs() >= MAX_OFFSET_SECS) {
            continue;
        }
        let pods: Vec<String> = round
            .pods()
            .into_iter()
            .filter(|(_, p)| str_at(p, "/spec/nodeName") == Some(node.as_str()))
            .filter_map(|(_, p)| str_at(p, "/metadata/name").map(str::to_string))
            .fold(Vec::new(), |mut acc, p| {
                if !acc.contains(&p) {
                    acc.push(p);
                }
                acc
            });
        // Since when: the first point beyond the tolerance after one within it.
        let since = series
            .series
            .points
            .windows(2)
            .rev()
            .find(|w| w[0].1.abs() < MAX_OFFSET_SECS && w[1].1.abs() >= MAX_OFFSET_SECS)
            .map_or(*t, |w| w[1].0);
        let mut refs = vec![cite(evidence, series.labels_text.to_string())];
        if let Some(pair) = series.pair_texts.last() {
            refs.push(cite(evidence, (*pair).to_string()));
        }
        out.push(
            Finding::new(
                ClockSkew {
                    node: node.clone(),
                    offset_secs: *value,
                    others,
                    unsynced: synced.iter().find(|(n, _)| n == node).map(|(_, s)| !*s),
                    pods,
                },
                Confidence::High,
                true,
            )
            .dated(from_unix_seconds(since))
            .citing(refs),
        );
    }
    out
}

#[cfg(test)]
mod tests;
