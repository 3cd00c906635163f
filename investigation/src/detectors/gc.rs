//! A JVM that spends most of its time collecting garbage: its heap is nearly full, every
//! collection frees little, and the work it serves waits behind the pauses. Elasticsearch and
//! OpenSearch say so themselves (`JvmGcMonitorService`: `[gc][183211] overhead, spent [7.9s]
//! collecting in the last [8.4s]`).
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`GcOverhead`] | cause | its log says so at least twice, the worst share at least [`HIGH_SHARE`] |
//!
//! What explains what: the pauses explain the calls to it that time out or fail — its clients'
//! calls to a Service that selects it (read this round) — and its failing probes.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::containers::pod_failure_explains;
use super::dependencies::DependencyFailure;
use super::lead::names_service;
use super::logscan::LogScan;
use super::text::quote_line;
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite,
};
use crate::kube;

/// The share of wall time spent collecting that makes the pauses the story.
pub const HIGH_SHARE: f64 = 0.5;

/// `overhead, spent [2.1s] collecting in the last [2.3s]` (also in ms).
static OVERHEAD: LazyLock<Regex> = regex!(
    r"overhead, spent \[(\d+(?:\.\d+)?)(ms|s|m)\] collecting in the last \[(\d+(?:\.\d+)?)(ms|s|m)\]"
);

/// A JVM in a pod spending most of its time in garbage collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GcOverhead {
    pub pod: String,
    /// The highest share of time spent collecting its log reports.
    pub share: f64,
    /// How many times it says so.
    pub count: usize,
    /// That line, quoted.
    pub says: String,
    /// The Services of the round that select the pod, with their cluster IPs: its clients call
    /// it by them.
    #[serde(default)]
    pub services: Vec<(String, Option<String>)>,
}

impl Payload for GcOverhead {
    const SPEC: KindSpec = KindSpec {
        name: "gc-overhead",
        role: Role::Cause,
        verified_when: "its log reports the overhead at least twice, the worst at least half \
                        the time",
        accounts_for: &[
            Symptom::Latency,
            Symptom::Errors,
            Symptom::Unavailable,
            Symptom::Saturation,
        ],
    };

    fn example() -> Self {
        Self {
            pod: "search-es-data-0".into(),
            share: 0.94,
            count: 2,
            says: "[gc][183211] overhead, spent [7.9s] collecting in the last [8.4s]".into(),
            services: vec![("search-es".into(), Some("10.96.88.41".into()))],
        }
    }

    fn title(&self) -> String {
        format!(
            "JVM in `{}` spends {:.0}% of its time in garbage collection (heap nearly full): `{}`",
            self.pod,
            self.share * 100.0,
            self.says
        )
    }

    fn detail(&self) -> String {
        format!(
            "The log of `{}` reports {} time(s) that garbage collection took most of the time \
             (up to {:.0}%): the heap is nearly full, each collection frees little, and every \
             request waits behind the pauses.",
            self.pod,
            self.count,
            self.share * 100.0
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Pod, self.pod.clone()))
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.pod == other.pod
    }

    fn step(&self, scene: &Scene) -> String {
        format!(
            "Find what fills the heap of `{}` (its heap against what it holds: caches, \
             fielddata, large queries or aggregations, more data than before) and relieve it — \
             cap the heavy queries or caches, or give {} more heap and memory.",
            self.pod,
            scene.workload_of(Some(&self.pod))
        )
    }

    /// The calls that time out or fail against a Service that selects it, and its own probes.
    fn explains(&self, effect: &Finding) -> bool {
        if let Fact::Dependency(d) = &effect.fact {
            // Pauses make calls wait and time out; they refuse or reset nothing.
            return (d.failure == DependencyFailure::Slow
                || (d.failure == DependencyFailure::Connect && d.timed_out()))
                && d.endpoint.as_deref().is_some_and(|e| {
                    self.services
                        .iter()
                        .any(|(name, ip)| names_service(e, name, ip.as_deref()))
                });
        }
        pod_failure_explains(Some(&self.pod), effect)
    }
}

/// Seconds in `value` `unit`.
fn seconds(value: &str, unit: &str) -> Option<f64> {
    let value: f64 = value.parse().ok()?;
    Some(match unit {
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        _ => value,
    })
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let services: Vec<(
        String,
        Option<String>,
        &serde_json::Map<String, serde_json::Value>,
    )> = round
        .objects("Service")
        .into_iter()
        .filter_map(|(_, s)| {
            Some((
                kube::str_at(s, "/metadata/name")?.to_string(),
                kube::str_at(s, "/spec/clusterIP")
                    .filter(|ip| *ip != "None")
                    .map(str::to_string),
                s.pointer("/spec/selector")
                    .and_then(serde_json::Value::as_object)?,
            ))
        })
        .collect();
    let pods = round.pods();
    let mut out: Vec<Finding> = Vec::new();
    for scan in LogScan::all(round, false) {
        let Some(pod) = scan.pod.clone() else {
            continue;
        };
        let mut worst: Option<(f64, &str)> = None;
        let mut count = 0;
        for &(_, line) in &scan.lines {
            let Some(caps) = OVERHEAD.captures(line) else {
                continue;
            };
            let (Some(spent), Some(window)) =
                (seconds(&caps[1], &caps[2]), seconds(&caps[3], &caps[4]))
            else {
                continue;
            };
            if window <= 0.0 {
                continue;
            }
            count += 1;
            let share = (spent / window).min(1.0);
            if worst.is_none_or(|(w, _)| share > w) {
                worst = Some((share, line));
            }
        }
        let Some((share, line)) = worst else {
            continue;
        };
        let quote = OVERHEAD
            .find(line)
            .map_or_else(|| quote_line(line), |m| m.as_str().to_string());
        let labels = pods
            .iter()
            .find(|(_, p)| kube::str_at(p, "/metadata/name") == Some(pod.as_str()))
            .map(|(_, p)| kube::labels_of(p))
            .unwrap_or_default();
        let selecting = services
            .iter()
            .filter(|(_, _, selector)| kube::selects(selector, &labels))
            .map(|(name, ip, _)| (name.clone(), ip.clone()))
            .collect();
        let verified = count >= 2 && share >= HIGH_SHARE;
        out.push(
            Finding::new(
                GcOverhead {
                    pod,
                    share,
                    count,
                    says: quote.clone(),
                    services: selecting,
                },
                if verified {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
                verified,
            )
            .citing(vec![cite(scan.evidence, quote)]),
        );
    }
    out
}

#[cfg(test)]
mod tests;
