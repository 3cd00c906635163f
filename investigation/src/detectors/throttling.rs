//! CPU throttling that lasts: the share of CFS periods a container is throttled in (from the
//! `container_cpu_cfs_throttled_periods_total` / `…_periods_total` counters, or a ratio a query
//! or recording rule computed), above 25 % — where latency starts to suffer, as
//! kubernetes-mixin's `CPUThrottlingHigh` has it — for 15 minutes or more; read against the
//! CPU limit the container's own description shows.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`CpuThrottling`] | cause | sustained throttling, and the container's spec shows the CPU limit it is throttled against (both written by the system, not the application) |
//!
//! What explains what: a throttled cluster DNS (CoreDNS, kube-dns) explains the lookups that
//! time out at it (`dependencies.rs`); throttling explains its own pods' latency directly.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::series::shape::{
    MIN_POINTS, THROTTLING_MIN_RUN_SAMPLES, THROTTLING_THRESHOLD, describe_throttling, per_step,
    throttling, throttling_ratio,
};
use super::series::{
    Item, QuotedSeries, SeriesKind, all_series, format_percent, items, kind_of_query, quotes,
    resource, short_name, shown, subject,
};
use super::{
    Citation, Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene,
    Subject, Symptom, cite,
};
use crate::evidence::{Capability, Evidence};

/// Workloads that serve the cluster's DNS.
const CLUSTER_DNS: [&str; 2] = ["coredns", "kube-dns"];

/// A container throttled against its CPU limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuThrottling {
    /// How the title names the series' subject ("Container `api`").
    pub who: String,
    pub series: String,
    pub pod: Option<String>,
    pub median: f64,
    pub max: f64,
    /// The start of the longest stretch above the threshold, when it is still going on and the
    /// window's median understates it.
    pub since: Option<DateTime<Utc>>,
    /// The CPU limit its description shows (`250m`).
    pub limit: Option<String>,
    /// Throttling in words, for the detail.
    pub words: String,
    pub shown: String,
}

impl CpuThrottling {
    /// The throttled pods serve the cluster's DNS.
    pub fn is_cluster_dns(&self) -> bool {
        [self.pod.as_deref().unwrap_or(""), self.who.as_str()]
            .iter()
            .any(|s| CLUSTER_DNS.iter().any(|dns| s.contains(dns)))
    }
}

impl Payload for CpuThrottling {
    const SPEC: KindSpec = KindSpec {
        name: "cpu-throttling",
        role: Role::Cause,
        verified_when: "throttling above 25 % is sustained for 15 min and the container's spec \
                        shows the CPU limit it is throttled against",
        accounts_for: &[Symptom::Latency, Symptom::Saturation, Symptom::Errors],
    };

    fn example() -> Self {
        Self {
            who: "Container `api`".into(),
            series: "container_cpu_cfs_throttled_periods_total{container=\"api\"}".into(),
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            median: 0.6,
            max: 0.63,
            since: None,
            limit: Some("250m".into()),
            words: "throttled above 25 % in 90 % of the samples".into(),
            shown: "03-04 08:00 UTC to 03-04 14:00 UTC".into(),
        }
    }

    fn title(&self) -> String {
        let base = match self.since {
            Some(since) => format!(
                "{} CPU-throttled since {} UTC: up to {} of CFS periods",
                self.who,
                since.format("%H:%M"),
                format_percent(self.max)
            ),
            None => format!(
                "{} CPU-throttled: median {}, max {} of CFS periods",
                self.who,
                format_percent(self.median),
                format_percent(self.max)
            ),
        };
        match &self.limit {
            Some(limit) => format!("{base} against a CPU limit of {limit}"),
            None => base,
        }
    }

    fn detail(&self) -> String {
        let mut detail = format!(
            "`{}` {} (data shown {}).",
            self.series, self.words, self.shown
        );
        match &self.limit {
            Some(limit) => detail.push_str(&format!(
                " The container's CPU limit is {limit}: it is throttled whenever it needs more, \
                 which slows every request it serves."
            )),
            None => detail.push_str(
                " Throttling slows requests; it does not by itself say why the alert fired.",
            ),
        }
        detail
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.series == other.series
            || super::same_subject(self.subject().as_ref(), other.subject().as_ref())
    }

    fn step(&self, scene: &Scene) -> String {
        let workload = self
            .pod
            .as_deref()
            .and_then(crate::kube::deployment_of_name)
            .map_or_else(|| scene.workload_ref.clone(), |d| format!("deployment/{d}"));
        format!(
            "The container is CPU-throttled: raise its CPU limit in {workload} (or remove it and \
             keep a request), or cut the work per request."
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        match &effect.fact {
            Fact::Dependency(d) => {
                self.is_cluster_dns()
                    && d.failure == super::dependencies::DependencyFailure::DnsTimeout
            }
            Fact::SlowSpan(s) => super::same_pod(self.pod.as_deref(), s.service.as_deref()),
            _ => false,
        }
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let all = items(round.evidence);
    all_series(&all)
        .filter_map(|(item, kind, series)| match kind {
            SeriesKind::ThrottleRatio => ratio_throttling(item.evidence, series, round),
            // Undivided counters pair up; a lone "counter" from a ratio query holds the ratio's
            // values under the numerator's name.
            SeriesKind::ThrottledPeriods => {
                counter_throttling(item, series, &all, round).or_else(|| {
                    let ratio_query = item
                        .evidence
                        .string_arg(&["query", "expr", "promql"])
                        .is_some_and(|q| kind_of_query(q) == SeriesKind::ThrottleRatio);
                    ratio_query
                        .then(|| ratio_throttling(item.evidence, series, round))
                        .flatten()
                })
            }
            _ => None,
        })
        .map(|f| with_limit(f, round.evidence))
        .collect()
}

/// Sustained throttling over `ratio`, citing `refs(anchors)`.
fn finding(
    series: &QuotedSeries,
    ratio: &[(f64, f64)],
    refs: impl FnOnce([usize; 2]) -> Vec<Citation>,
    round: &Round<'_>,
) -> Option<Finding> {
    let (t, anchors) = throttling(ratio)?;
    if !t.sustained {
        return None;
    }
    let ongoing = ratio
        .iter()
        .rev()
        .take(THROTTLING_MIN_RUN_SAMPLES)
        .all(|(_, v)| *v > THROTTLING_THRESHOLD);
    let since = t
        .longest_run
        .filter(|_| ongoing && t.median <= THROTTLING_THRESHOLD)
        .map(|(start, _)| start);
    Some(
        Finding::new(
            CpuThrottling {
                who: subject(series),
                series: short_name(&series.series.labels),
                pod: resource(series, round.ctx),
                median: t.median,
                max: t.max,
                since,
                limit: None,
                words: describe_throttling(&t),
                shown: shown(series),
            },
            // Throttled most of the time, or without a break up to the last sample (a recent
            // onset that is still going on), not only in a past stretch.
            if t.median > THROTTLING_THRESHOLD || ongoing {
                Confidence::High
            } else {
                Confidence::Medium
            },
            false,
        )
        .dated(t.longest_run.map(|(start, _)| start))
        .citing(refs(anchors)),
    )
}

fn ratio_throttling(
    evidence: &Evidence,
    series: &QuotedSeries,
    round: &Round<'_>,
) -> Option<Finding> {
    let points = &series.series.points;
    // A "ratio" outside 0..1 is something else (a percentage, a rate): not read as one.
    if points.len() < MIN_POINTS || points.iter().any(|(_, v)| !(0.0..=1.05).contains(v)) {
        return None;
    }
    finding(
        series,
        points,
        |anchors| quotes(evidence, series, &anchors),
        round,
    )
}

fn counter_throttling(
    item: &Item,
    throttled: &QuotedSeries,
    all: &[Item],
    round: &Round<'_>,
) -> Option<Finding> {
    let same_labels = |s: &QuotedSeries| {
        let strip = |l: &std::collections::BTreeMap<String, String>| {
            l.iter()
                .filter(|(k, _)| k.as_str() != "__name__")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        strip(&s.series.labels) == strip(&throttled.series.labels)
    };
    // The partner counter of the same container, preferably from the same query.
    let (periods_evidence, periods) = std::iter::once(item)
        .chain(all.iter())
        .flat_map(|i| i.series.iter().map(move |(k, s)| (i.evidence, *k, s)))
        .find(|(_, kind, s)| *kind == SeriesKind::CfsPeriods && same_labels(s))
        .map(|(e, _, s)| (e, s))?;
    let ratio = throttling_ratio(
        &per_step(&throttled.series.points),
        &per_step(&periods.series.points),
    );
    if ratio.len() < MIN_POINTS {
        return None;
    }
    finding(
        throttled,
        &ratio,
        |anchors| {
            let mut refs = vec![
                cite(item.evidence, throttled.labels_text.to_string()),
                cite(periods_evidence, periods.labels_text.to_string()),
            ];
            for i in anchors {
                if let Some(pair) = ratio.get(i).and_then(|(t, _)| throttled.pair_at(*t)) {
                    let citation = cite(item.evidence, pair.to_string());
                    if !refs.contains(&citation) {
                        refs.push(citation);
                    }
                }
            }
            refs
        },
        round,
    )
}

/// Sustained, high-confidence throttling is a cause, not just a shape, when the pod's own
/// spec shows the CPU limit it is throttled against.
fn with_limit(mut finding: Finding, evidence: &[Evidence]) -> Finding {
    let Fact::CpuThrottling(throttled) = &mut finding.fact else {
        return finding;
    };
    if finding.confidence != Confidence::High {
        return finding;
    }
    // The throttled pod's own description (any pod's, when the finding names none).
    let pod = throttled.pod.clone();
    let limit = evidence
        .iter()
        .filter(|e| e.capability == Capability::PodDescribe)
        .filter(|e| pod.as_deref().is_none_or(|p| e.excerpt.contains(p)))
        .find_map(|e| {
            let lines: Vec<&str> = e.excerpt.lines().collect();
            let at = lines.iter().position(|l| {
                let t = l.trim();
                t == "limits:" || t == "Limits:"
            })?;
            lines[at + 1..lines.len().min(at + 4)]
                .iter()
                .find(|l| l.trim_start().starts_with("cpu:"))
                .map(|l| (e, l.trim().to_string()))
        });
    let Some((limit_evidence, line)) = limit else {
        return finding;
    };
    throttled.limit = Some(
        line.trim_start_matches("cpu:")
            .trim()
            .trim_matches('\'')
            .to_string(),
    );
    finding.verified = true;
    finding.refs.push(cite(limit_evidence, line));
    finding
}

#[cfg(test)]
mod tests;
