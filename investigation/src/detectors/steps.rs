//! The alert's own metric stepping up: a sustained step in a range-query result (the alert's
//! expression, or the catalogue's, over the alert window), found by the one step-change
//! implementation (`series::shape::find_step_change`). Quotes are the series' label object and
//! the first value pair after the change, cut from the raw JSON text, so they are verbatim
//! however the JSON was formatted.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`MetricStep`] | symptom | never: a step shows *when* the symptom began, not why |
//! | [`LoadGrowth`] | cause | a step up in the request rate at the cluster's entry (an ingress controller or gateway): traffic from outside |
//!
//! A rollout shortly before the step explains it (`changes.rs`). Load that stepped up explains
//! an autoscaler at its maximum. Requests counted by a service itself may come from anywhere
//! inside the cluster (a batch job, a client's retries): their rise is a lead until its source
//! is known, never a verified cause.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::lead::Lead;
use super::series::{format_value, parse_prometheus_matrix, quoted_series};
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite,
};
use crate::evidence::Capability;

/// A sustained step up in a metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricStep {
    /// `name{k="v", …}`.
    pub series: String,
    pub before: f64,
    pub after: f64,
    /// When the step began.
    pub at: DateTime<Utc>,
    /// Minutes before the alert started (negative: after), when the alert says when.
    pub minutes_before: Option<i64>,
    /// The service, deployment or pod its labels name.
    pub resource: Option<String>,
}

impl Payload for MetricStep {
    const SPEC: KindSpec = KindSpec {
        name: "metric-step-change",
        role: Role::Symptom,
        verified_when: "never: a step shows when the symptom began, not why",
        accounts_for: &[Symptom::Errors, Symptom::Latency, Symptom::Saturation],
    };

    fn example() -> Self {
        Self {
            series: "http_error_ratio{service=\"payments\"}".into(),
            before: 0.01,
            after: 0.2,
            at: DateTime::<Utc>::UNIX_EPOCH,
            minutes_before: Some(9),
            resource: Some("payments".into()),
        }
    }

    fn title(&self) -> String {
        format!(
            "Step up in `{}`: {} from {} UTC",
            self.series,
            rise(self.before, self.after, "→"),
            self.at.format("%H:%M")
        )
    }

    fn detail(&self) -> String {
        let when = match self.minutes_before {
            Some(m) if m >= 0 => format!(", {m} min before the alert started"),
            Some(m) => format!(", {} min after the alert started", -m),
            None => String::new(),
        };
        format!(
            "`{}` rose from a median of {} starting {} UTC{when}, and stayed up.",
            self.series,
            rise(self.before, self.after, "to"),
            self.at.format("%H:%M:%S")
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Series, self.resource.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.series == other.series
    }

    fn step(&self, scene: &Scene) -> String {
        format!(
            "Find what changed when the metric stepped (deploys, config, traffic, a dependency) \
             {}.",
            scene.when
        )
    }

    /// A rise in a series of work (not an object's state as kube-state-metrics reports it) may
    /// be a batch job's load arriving at once: the Jobs that started then.
    fn leads(&self) -> Vec<Lead> {
        if self.after > self.before && !self.series.starts_with("kube_") {
            vec![Lead::JobsStarted]
        } else {
            Vec::new()
        }
    }
}

/// A step up in the load a service serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadGrowth {
    pub series: String,
    pub before: f64,
    pub after: f64,
    pub at: DateTime<Utc>,
    /// The service, deployment or pod its labels name.
    pub resource: Option<String>,
    /// Counted at the cluster's entry (an ingress controller, a gateway): traffic from outside.
    #[serde(default)]
    pub at_entry: bool,
}

impl Payload for LoadGrowth {
    const SPEC: KindSpec = KindSpec {
        name: "load-growth",
        role: Role::Cause,
        verified_when: "the request rate counted at the cluster's entry (an ingress controller or \
                        gateway) steps up and stays up",
        accounts_for: &[Symptom::Saturation],
    };

    fn example() -> Self {
        Self {
            series: "{namespace=\"shop\", service=\"storefront-web\"}".into(),
            before: 1100.0,
            after: 2400.0,
            at: DateTime::<Utc>::UNIX_EPOCH,
            resource: Some("storefront-web".into()),
            at_entry: true,
        }
    }

    fn title(&self) -> String {
        format!(
            "Load rose: `{}` from {} from {} UTC",
            self.series,
            rise(self.before, self.after, "to"),
            self.at.format("%H:%M")
        )
    }

    fn detail(&self) -> String {
        format!(
            "The request rate `{}` rose from a median of {} from {} UTC and stayed up: more \
             work than before for the same pods.",
            self.series,
            rise(self.before, self.after, "to"),
            self.at.format("%H:%M:%S")
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Workload, self.resource.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.series == other.series
    }

    fn step(&self, scene: &Scene) -> String {
        format!(
            "Find where the extra requests come from since {} UTC (a campaign, a client's \
             retries, a batch job) and whether capacity should follow them (the autoscaler's \
             maxReplicas, requests and limits of {}).",
            self.at.format("%H:%M"),
            self.resource
                .as_deref()
                .map_or(scene.workload_ref.clone(), |r| format!("`{r}`"))
        )
    }

    /// Who brought the extra load: a batch job that started when it grew.
    fn leads(&self) -> Vec<Lead> {
        vec![Lead::JobsStarted]
    }

    fn explains(&self, effect: &Finding) -> bool {
        let ours = |other: Option<&str>| super::same_pod(self.resource.as_deref(), other);
        match &effect.fact {
            Fact::AutoscalerMaxed(a) => ours(a.target.as_deref().or(Some(a.hpa.as_str()))),
            _ => false,
        }
    }
}

/// `1.1k to 2.4k (×2.2)` (`to` or `→`), without the factor from a zero baseline.
fn rise(before: f64, after: f64, to: &str) -> String {
    let factor = if before > 0.0 {
        format!(" (×{:.1})", after / before)
    } else {
        String::new()
    };
    format!(
        "{} {to} {}{factor}",
        format_value(before),
        format_value(after)
    )
}

/// Counters of requests at the cluster's entry.
const ENTRY_COUNTERS: [&str; 3] = [
    "nginx_ingress_controller_requests",
    "traefik_service_requests_total",
    "envoy_cluster_upstream_rq_total",
];

/// Whether a series counts requests (a rate of requests, not of errors, nor a latency): by its
/// metric name, or by the query that made it when an aggregation dropped the name.
fn is_request_rate(name: Option<&str>, query: Option<&str>) -> bool {
    let text = name.or(query).unwrap_or_default().to_ascii_lowercase();
    let requests = [
        "requests",
        "request_count",
        "_rps",
        "qps",
        "throughput",
        "handled_total",
    ]
    .iter()
    .any(|w| text.contains(w));
    let not_load = [
        "error",
        "5xx",
        "status=~\"5",
        "code=~\"5",
        "status=\"5",
        "_bucket",
        "_sum",
        "latency",
        "/",
    ]
    .iter()
    .any(|w| text.contains(w));
    requests && !not_load
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let ctx = round.ctx;
    let mut out = Vec::new();
    for evidence in round.of(Capability::MetricRange) {
        let Ok(series) = parse_prometheus_matrix(&evidence.excerpt) else {
            continue;
        };
        let quoted = quoted_series(&evidence.excerpt);
        let query = evidence.string_arg(&["query", "expr", "promql"]);
        let rated = query.is_some_and(|q| {
            ["rate(", "increase(", "delta(", "deriv("]
                .iter()
                .any(|f| q.contains(f))
        });
        for s in &series {
            // A raw counter only ever climbs: its "step" is the counter counting. A CloudWatch
            // exporter's series (its `dimension_*` labels) is a statistic per period whatever
            // its name (`…_sum` is the Sum statistic), never a counter.
            let cloudwatch = s.labels.keys().any(|k| super::series::is_dimension(k));
            let raw_counter = !rated
                && !cloudwatch
                && s.labels.get("__name__").is_some_and(|n| {
                    ["_total", "_count", "_sum", "_bucket"]
                        .iter()
                        .any(|suffix| n.ends_with(suffix))
                });
            if raw_counter {
                continue;
            }
            let Some(step) = super::series::find_step_change(&s.points, &ctx.step) else {
                continue;
            };
            let mut refs = Vec::new();
            // The quoted series with these labels: the two parses need not list the same
            // series (a label value holding a brace is skipped by one of them).
            if let Some(q) = quoted.iter().find(|q| q.series.labels == s.labels) {
                refs.push(cite(evidence, q.labels_text.to_string()));
                if let Some(pair) = q.pair_at(s.points[step.index].0) {
                    refs.push(cite(evidence, pair.to_string()));
                }
            }
            let strong = step.before_median <= 0.0
                || step.after_median >= 2.0 * ctx.step.min_ratio * step.before_median;
            let resource = ["service", "destination_service_name", "deployment", "pod"]
                .iter()
                .find_map(|k| s.labels.get(*k).cloned());
            let name = s.labels.get("__name__").map(String::as_str);
            if is_request_rate(name, query) {
                let at_entry = name.is_some_and(|n| ENTRY_COUNTERS.contains(&n))
                    || s.labels.get("source_workload") == Some(&"istio-ingressgateway".to_string());
                out.push(
                    Finding::new(
                        LoadGrowth {
                            series: s.display_name(),
                            before: step.before_median,
                            after: step.after_median,
                            at: step.started_at,
                            resource,
                            at_entry,
                        },
                        if at_entry {
                            Confidence::High
                        } else {
                            Confidence::Medium
                        },
                        at_entry,
                    )
                    .dated(Some(step.started_at))
                    .citing(refs),
                );
                continue;
            }
            out.push(
                Finding::new(
                    MetricStep {
                        series: s.display_name(),
                        before: step.before_median,
                        after: step.after_median,
                        at: step.started_at,
                        minutes_before: ctx
                            .alert_start
                            .map(|start| (start - step.started_at).num_minutes()),
                        resource,
                    },
                    if strong {
                        Confidence::High
                    } else {
                        Confidence::Medium
                    },
                    false,
                )
                .dated(Some(step.started_at))
                .citing(refs),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests;
