//! What the alert saw has ended: a container that restarted but has run ready and unrestarted
//! for a while since around the alert, or (for a replica alert) a workload whose every replica
//! is updated, ready and available again after a recent change.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`Recovered`] | context | never a cause: it says the trouble is over, not why it happened |
//!
//! A recovery supersedes the restart counts it follows (`standing.rs`): old restarts are
//! history, not a crash loop. With nothing else found, the report says it recovered and asks.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::series::quoted_series;
use super::text::cite_values;
use super::{
    Confidence, DetectionContext, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene,
    Subject, Symptom, Threshold, cite, parse_prometheus_matrix,
};
use crate::evidence::{Capability, Evidence};
use crate::kube;

/// How long a container must have run cleanly since its last restart to count as recovered.
const STABLE_FOR: Duration = Duration::minutes(30);

/// What recovered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Recovery {
    /// A container of a pod: restarted before, running and ready since.
    Container {
        pod: String,
        container: String,
        restarts: u64,
        /// Minutes it has run since.
        running_minutes: i64,
    },
    /// A workload: all desired replicas updated, ready and available.
    Workload {
        kind: String,
        name: String,
        replicas: u64,
    },
    /// A Job the alert is about: it completed.
    JobCompleted { name: String },
    /// The alert's own metric: back on the good side of its threshold (or at its baseline
    /// before the alert) for a while.
    Metric {
        series: String,
        peak: f64,
        /// Its latest value; `None` when the query keeps only breaching samples and none came
        /// since.
        now: Option<f64>,
        /// The threshold the alert fires at, or the baseline before it.
        against: Against,
        quiet_minutes: i64,
    },
}

/// What a recovered metric is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "against", content = "value", rename_all = "snake_case")]
pub enum Against {
    Threshold(f64),
    Baseline(f64),
}

/// Something the alert saw that has ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovered {
    pub recovery: Recovery,
    /// Since when.
    pub since: DateTime<Utc>,
}

impl Payload for Recovered {
    const SPEC: KindSpec = KindSpec {
        name: "recovered",
        role: Role::Context,
        verified_when: "never a cause: a recovery says the trouble ended, not why",
        accounts_for: &[Symptom::Any],
    };

    fn example() -> Self {
        Self {
            recovery: Recovery::Container {
                pod: "api-7d9f8c6b5-x2k4q".into(),
                container: "api".into(),
                restarts: 4,
                running_minutes: 42,
            },
            since: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    fn title(&self) -> String {
        let since = self.since.format("%H:%M");
        match &self.recovery {
            Recovery::Container { container, .. } => {
                format!("Container `{container}` recovered: running and ready since {since} UTC")
            }
            Recovery::Workload {
                kind,
                name,
                replicas,
            } => format!(
                "{kind} `{name}` recovered: all {replicas} of {replicas} replicas updated, ready \
                 and available since {since} UTC"
            ),
            Recovery::JobCompleted { name } => format!(
                "Job `{name}` completed at {since} UTC: the run the alert is about has finished"
            ),
            Recovery::Metric {
                series,
                now,
                against,
                ..
            } => {
                let now = now.map_or("no breaching sample".to_string(), |v| {
                    format!("{} now", number(v))
                });
                match against {
                    Against::Threshold(t) => format!(
                        "The alert's metric recovered: `{series}` is back below its threshold \
                         {} since {since} UTC ({now})",
                        number(*t)
                    ),
                    Against::Baseline(b) => format!(
                        "The alert's metric recovered: `{series}` is back to its baseline of \
                         about {} since {since} UTC ({now})",
                        number(*b)
                    ),
                }
            }
        }
    }

    fn detail(&self) -> String {
        let since = self.since.format("%H:%M");
        match &self.recovery {
            Recovery::Container {
                pod,
                container,
                restarts,
                running_minutes,
            } => format!(
                "Container `{container}` of `{pod}` restarted {restarts} times, but has been \
                 running and ready since {since} UTC ({running_minutes} min, no restart since): \
                 what the alert saw is not happening now."
            ),
            Recovery::Workload {
                kind,
                name,
                replicas,
            } => format!(
                "{kind} `{name}` has all {replicas} of {replicas} desired replicas updated, \
                 ready and available, the last of them since {since} UTC: the replica \
                 shortfall the alert saw is no longer there."
            ),
            Recovery::JobCompleted { name } => format!(
                "Job `{name}` has condition Complete since {since} UTC: the run the alert saw \
                 failing or running long has finished, and earlier failed attempts are history."
            ),
            Recovery::Metric {
                peak,
                quiet_minutes,
                ..
            } => format!(
                "Re-run over the window, the alert's own expression peaked at {} and has been \
                 back for {quiet_minutes} min: what the alert saw is no longer happening.",
                number(*peak)
            ),
        }
    }

    fn subject(&self) -> Option<Subject> {
        Some(match &self.recovery {
            Recovery::Container { pod, .. } => Subject::new(ObjectKind::Pod, pod.clone()),
            Recovery::Workload { name, .. } => Subject::new(ObjectKind::Workload, name.clone()),
            Recovery::Metric { series, .. } => Subject::new(ObjectKind::Series, series.clone()),
            Recovery::JobCompleted { name } => Subject::new(ObjectKind::Job, name.clone()),
        })
    }

    fn step(&self, scene: &Scene) -> String {
        match &self.recovery {
            Recovery::Workload { .. } => format!(
                "{} is fully available again: confirm the alert resolves, and if the rollout \
                 was slow, look at what held each new replica back (readiness, \
                 `minReadySeconds`).",
                scene.workload_ref
            ),
            Recovery::JobCompleted { .. } => "Nothing to act on now: the Job completed; if it \
                                               ran long, compare its duration with earlier runs \
                                               before the next one."
                .to_string(),
            Recovery::Metric { .. } => "Nothing to act on while it stays back: confirm the alert \
                                         resolves, and if it recurs, compare what changed at its \
                                         start."
                .to_string(),
            Recovery::Container { pod, container, .. } => format!(
                "It has recovered for now: check whether the alert has resolved and what the \
                 restarts {} had in common (`{}`) before closing the thread.",
                scene.when,
                scene.previous_log_command(Some(pod), Some(container))
            ),
        }
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let ctx = round.ctx;
    let mut pods: Vec<(&Evidence, &Value)> = round.pods();
    pods.extend(
        round
            .items()
            .iter()
            .filter(|(e, ..)| e.capability == Capability::PodList)
            .map(|(e, _, object)| (*e, object)),
    );
    let mut out = Vec::new();
    out.extend(
        round
            .of(Capability::MetricRange)
            .filter_map(|evidence| metric(evidence, ctx)),
    );
    for (evidence, object) in round.parsed_objects() {
        match evidence.capability {
            Capability::PodDescribe => out.extend(container(evidence, object, ctx.alert_start)),
            Capability::ObjectGet | Capability::ObjectList | Capability::Other(_)
                if kube::str_at(object, "/kind") == Some("Job") =>
            {
                out.extend(job(evidence, object, ctx));
            }
            Capability::ObjectGet | Capability::ObjectList | Capability::Other(_)
                if ctx.about_replicas
                    && matches!(
                        kube::str_at(object, "/kind"),
                        Some("Deployment" | "StatefulSet" | "DaemonSet")
                    ) =>
            {
                out.extend(workload(evidence, object, ctx, &pods));
            }
            _ => {}
        }
    }
    out
}

/// Containers that restarted before but have run ready and unrestarted for a while since
/// around the alert.
/// How long the alert's metric must have been back to count as recovered.
const QUIET_FOR: Duration = Duration::minutes(10);

/// The alert's own expression, re-run: recovered when every series it returns is back.
fn metric(evidence: &Evidence, ctx: &DetectionContext) -> Option<Finding> {
    let alert_query = ctx.alert_query.as_ref()?;
    let query = evidence.string_arg(&["query", "expr", "promql"])?;
    let squash = |q: &str| q.split_whitespace().collect::<String>();
    if squash(query) != squash(&alert_query.query) {
        return None;
    }
    let alert = ctx.alert_start?.timestamp() as f64;
    let series = parse_prometheus_matrix(&evidence.excerpt).ok()?;
    let fetched = evidence.fetched_at.timestamp() as f64;
    let filtered = alert_query.threshold.is_some() && has_comparison(query);
    let mut back: Vec<(&super::MetricSeries, Back)> = Vec::new();
    for s in &series {
        let came_back = series_back(&s.points, alert, fetched, alert_query.threshold, filtered)?;
        back.push((s, came_back));
    }
    let (strongest, how) = back
        .into_iter()
        .max_by(|a, b| a.1.peak.abs().total_cmp(&b.1.peak.abs()))?;
    let since = DateTime::from_timestamp(how.since as i64, 0)?;
    let mut refs = Vec::new();
    if let Some(q) = quoted_series(&evidence.excerpt)
        .iter()
        .find(|q| q.series.labels == strongest.labels)
    {
        refs.push(cite(evidence, q.labels_text.to_string()));
        if let Some(pair) = q.pair_at(how.since) {
            refs.push(cite(evidence, pair.to_string()));
        }
    }
    if refs.is_empty() {
        return None;
    }
    Some(
        Finding::new(
            Recovered {
                recovery: Recovery::Metric {
                    series: strongest.display_name(),
                    peak: how.peak,
                    now: how.now,
                    against: how.against,
                    quiet_minutes: ((how.last - how.since) / 60.0) as i64,
                },
                since,
            },
            Confidence::High,
            true,
        )
        .dated(Some(since))
        .citing(refs),
    )
}

/// Whether the query keeps only the samples past its threshold (Prometheus drops the others).
fn has_comparison(query: &str) -> bool {
    Threshold::of_expression(query).is_some()
}

/// How a series came back.
struct Back {
    peak: f64,
    now: Option<f64>,
    against: Against,
    /// Unix seconds: the first sample back after the last one out.
    since: f64,
    /// Unix seconds of its last sample.
    last: f64,
}

/// Whether a series of the alert's metric is back: with a threshold, past it around the alert
/// and on the good side of it for [`QUIET_FOR`] since (a query that keeps only breaching
/// samples, `filtered`, has had none for that long); without one, far from its baseline before
/// the alert and back near it since.
fn series_back(
    points: &[(f64, f64)],
    alert: f64,
    fetched: f64,
    threshold: Option<Threshold>,
    filtered: bool,
) -> Option<Back> {
    let quiet = QUIET_FOR.num_seconds() as f64;
    let around: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(t, _)| *t >= alert - 1800.0)
        .collect();
    let &(last, last_value) = around.last()?;
    match threshold {
        Some(threshold) => {
            let out = |v: f64| threshold.breached_by(v);
            let last_out = around.iter().rposition(|(_, v)| out(*v))?;
            let peak = around
                .iter()
                .map(|(_, v)| *v)
                .filter(|v| out(*v))
                .max_by(|a, b| a.abs().total_cmp(&b.abs()))?;
            let against = Against::Threshold(match threshold {
                Threshold::Above(t) | Threshold::Below(t) => t,
            });
            // A query with a comparison returns only breaching samples from Prometheus; a
            // source that did not apply it returns them all, read like any series.
            if filtered && around.iter().all(|(_, v)| out(*v)) {
                let since = around[last_out].0;
                return (last_out + 1 == around.len() && fetched - since >= quiet).then_some(
                    Back {
                        peak,
                        now: None,
                        against,
                        since,
                        last: fetched,
                    },
                );
            }
            let since = around.get(last_out + 1)?.0;
            (last - since >= quiet).then_some(Back {
                peak,
                now: Some(last_value),
                against,
                since,
                last,
            })
        }
        None => {
            let mut before: Vec<f64> = points
                .iter()
                .filter(|(t, _)| *t < alert - 1800.0)
                .map(|(_, v)| *v)
                .collect();
            if before.len() < 3 {
                return None;
            }
            before.sort_by(f64::total_cmp);
            let baseline = before[before.len() / 2];
            let peak = around
                .iter()
                .map(|(_, v)| *v)
                .max_by(|a, b| (a - baseline).abs().total_cmp(&(b - baseline).abs()))?;
            let excursion = (peak - baseline).abs();
            // Only a clear excursion (at least double the baseline) recovers from anything.
            if excursion <= baseline.abs().max(1e-9) {
                return None;
            }
            let near = |v: f64| (v - baseline).abs() <= excursion * 0.2;
            let last_away = around.iter().rposition(|(_, v)| !near(*v))?;
            let since = around.get(last_away + 1)?.0;
            (last - since >= quiet).then_some(Back {
                peak,
                now: Some(last_value),
                against: Against::Baseline(baseline),
                since,
                last,
            })
        }
    }
}

/// A value as a reply shows it: at most three decimals, no trailing zeros.
fn number(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The Job the alert names, completed since the alert began (a retry succeeded, a long run
/// ended): verified by its own Complete condition.
fn job(evidence: &Evidence, object: &Value, ctx: &DetectionContext) -> Option<Finding> {
    let name = kube::str_at(object, "/metadata/name")?;
    if ctx.default_resource.as_deref() != Some(name) {
        return None;
    }
    let complete = kube::conditions_of(object)
        .into_iter()
        .find(|c| c.kind == "Complete" && c.status == "True")?;
    let since = complete.since.as_deref()?;
    let at = DateTime::parse_from_rfc3339(since)
        .ok()?
        .with_timezone(&Utc);
    if ctx
        .alert_start
        .is_none_or(|alert| at < alert - Duration::minutes(10))
    {
        return None;
    }
    let mut f = Finding::new(
        Recovered {
            recovery: Recovery::JobCompleted {
                name: name.to_string(),
            },
            since: at,
        },
        Confidence::High,
        true,
    )
    .dated(Some(at));
    cite_values(&mut f, evidence, &["type: Complete", since]);
    (!f.refs.is_empty()).then_some(f)
}

fn container(evidence: &Evidence, pod: &Value, alert: Option<DateTime<Utc>>) -> Vec<Finding> {
    let Some(name) = kube::str_at(pod, "/metadata/name") else {
        return Vec::new();
    };
    let statuses = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for status in &statuses {
        let restarts = status
            .get("restartCount")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let ready = status.get("ready").and_then(Value::as_bool) == Some(true);
        let Some(started) = kube::str_at(status, "/state/running/startedAt") else {
            continue;
        };
        let Ok(started_at) = DateTime::parse_from_rfc3339(started) else {
            continue;
        };
        let started_at = started_at.with_timezone(&Utc);
        let running_for = evidence.fetched_at - started_at;
        // Only an instance that came back around or after the alert ended what the alert saw;
        // one running since long before it says nothing about the alert.
        let came_back = alert.is_some_and(|alert| started_at >= alert - Duration::minutes(10));
        if restarts == 0 || !ready || running_for < STABLE_FOR || !came_back {
            continue;
        }
        let mut f = Finding::new(
            Recovered {
                recovery: Recovery::Container {
                    pod: name.to_string(),
                    container: kube::str_at(status, "/name").unwrap_or("?").to_string(),
                    restarts,
                    running_minutes: running_for.num_minutes(),
                },
                since: started_at,
            },
            Confidence::High,
            false,
        )
        .dated(Some(started_at));
        cite_values(
            &mut f,
            evidence,
            &[&format!("startedAt: {started}"), started],
        );
        if !f.refs.is_empty() {
            out.push(f);
        }
    }
    out
}

/// A workload whose every desired replica is updated, ready and available again, with a
/// condition that changed since shortly before the alert (its rollout finished).
fn workload(
    evidence: &Evidence,
    object: &Value,
    ctx: &DetectionContext,
    pods: &[(&Evidence, &Value)],
) -> Option<Finding> {
    let alert = ctx.alert_start;
    let (Some(kind), Some(name), _) = kube::identity(object) else {
        return None;
    };
    let count = |path: &str| object.pointer(path).and_then(Value::as_u64);
    let (desired, counts) = if kind == "DaemonSet" {
        (
            count("/status/desiredNumberScheduled"),
            [
                count("/status/numberReady"),
                count("/status/numberAvailable"),
                count("/status/updatedNumberScheduled"),
            ],
        )
    } else {
        (
            count("/spec/replicas"),
            [
                count("/status/readyReplicas"),
                count("/status/availableReplicas"),
                count("/status/updatedReplicas"),
            ],
        )
    };
    let desired = desired.filter(|d| *d > 0)?;
    let settled = count("/status/observedGeneration")
        .zip(count("/metadata/generation"))
        .is_none_or(|(observed, generation)| observed >= generation);
    if !settled || counts.iter().any(|c| *c != Some(desired)) {
        return None;
    }
    let changed = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| kube::str_at(c, "/status") == Some("True"))
        .filter_map(|c| {
            kube::str_at(c, "/lastUpdateTime").or_else(|| kube::str_at(c, "/lastTransitionTime"))
        })
        .filter_map(|at| DateTime::parse_from_rfc3339(at).ok())
        .map(|at| at.with_timezone(&Utc))
        .max();
    // A StatefulSet or DaemonSet keeps no condition dating it: its pods' readiness does.
    let ready_pods = ready_since(kind, name, pods);
    let changed = changed.or(ready_pods.as_ref().map(|(at, _, _)| *at))?;
    if alert.is_none_or(|alert| changed < alert - Duration::minutes(10)) {
        return None;
    }
    // The workload the alert is about, whole again for a while: what it saw has ended.
    let verified =
        ctx.default_resource.as_deref() == Some(name) && evidence.fetched_at - changed >= QUIET_FOR;
    let mut f = Finding::new(
        Recovered {
            recovery: Recovery::Workload {
                kind: kind.to_string(),
                name: name.to_string(),
                replicas: desired,
            },
            since: changed,
        },
        Confidence::High,
        verified,
    )
    .dated(Some(changed));
    let ready_key = if kind == "DaemonSet" {
        "numberReady:"
    } else {
        "readyReplicas:"
    };
    cite_values(&mut f, evidence, &[ready_key, "NewReplicaSetAvailable"]);
    if let Some((_, pod_evidence, since)) = ready_pods {
        cite_values(&mut f, pod_evidence, &[since.as_str()]);
    }
    (!f.refs.is_empty()).then_some(f)
}

/// When the last of workload `kind`/`name`'s pods the round holds became ready, with the
/// evidence and time text that say so; `None` unless every one of them is ready.
fn ready_since<'a>(
    kind: &str,
    name: &str,
    pods: &[(&'a Evidence, &Value)],
) -> Option<(DateTime<Utc>, &'a Evidence, String)> {
    let owned = |pod: &Value| {
        pod.pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(
                |o| match (kube::str_at(o, "/kind"), kube::str_at(o, "/name")) {
                    (Some("ReplicaSet"), Some(owner)) => {
                        kind == "Deployment"
                            && owner
                                .strip_prefix(name)
                                .is_some_and(|rest| rest.starts_with('-'))
                    }
                    (Some(owner_kind), Some(owner)) => owner_kind == kind && owner == name,
                    _ => false,
                },
            )
    };
    let mut latest: Option<(DateTime<Utc>, &Evidence, String)> = None;
    let mut any = false;
    for (evidence, pod) in pods.iter().filter(|(_, p)| owned(p)) {
        any = true;
        let ready = kube::conditions_of(pod)
            .into_iter()
            .find(|c| c.kind == "Ready")?;
        if ready.status != "True" {
            return None;
        }
        let since = ready.since?;
        let at = DateTime::parse_from_rfc3339(&since)
            .ok()?
            .with_timezone(&Utc);
        if latest.as_ref().is_none_or(|(t, _, _)| at > *t) {
            latest = Some((at, evidence, since));
        }
    }
    any.then_some(latest).flatten()
}

#[cfg(test)]
mod tests;
