//! "Did a batch job start when it began?" — a Job that started just before the alert's metric
//! stepped up or its load grew: a backfill, an export or a report that arrives with its whole
//! load at once, on a service or a managed resource it shares with everyone else. Jobs are read
//! from the round's Job objects (their `status.startTime`), in any namespace: the caller is
//! often another team's.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`BatchStarted`] | cause (a suspect until verified) | the only Job that started in the 15 minutes before a load growth or a step up in a series of work the round found, and still running then |
//!
//! What explains what: the job explains the step or the load growth that followed it.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::text::quote_line;
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite,
};
use crate::kube;

/// A job that starts this long before a step may be what stepped.
const BEFORE_STEP: Duration = Duration::minutes(15);
/// Clock skew between a job's start and a metric's samples.
const SKEW: Duration = Duration::minutes(2);

/// A Job that started just before the alert's metric stepped or its load grew.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchStarted {
    pub job: String,
    pub namespace: Option<String>,
    /// The CronJob that made it, when one did.
    pub cronjob: Option<String>,
    pub started: DateTime<Utc>,
    /// The series that stepped or grew after it, and how many minutes after.
    pub followed_by: String,
    pub lag_minutes: i64,
}

impl Payload for BatchStarted {
    const SPEC: KindSpec = KindSpec {
        name: "batch-started",
        role: Role::Cause,
        verified_when: "the only Job that started in the 15 minutes before a step or a load \
                        growth the round found, and still running then",
        accounts_for: &[
            Symptom::Saturation,
            Symptom::Latency,
            Symptom::Errors,
            Symptom::Any,
        ],
    };

    fn example() -> Self {
        Self {
            job: "feed-exporter-29087400".into(),
            namespace: Some("marketing".into()),
            cronjob: Some("feed-exporter".into()),
            started: DateTime::<Utc>::UNIX_EPOCH,
            followed_by: "catalog-search requests".into(),
            lag_minutes: 1,
        }
    }

    fn title(&self) -> String {
        let of = self
            .cronjob
            .as_deref()
            .map(|c| format!(" (CronJob `{c}`)"))
            .unwrap_or_default();
        format!(
            "Job `{}`{of} started {} min before `{}` rose",
            self.job, self.lag_minutes, self.followed_by
        )
    }

    fn detail(&self) -> String {
        format!(
            "Job `{}`{} started at {} UTC and was still running when `{}` rose {} min later: a \
             batch job brings its whole load at once, to what it shares with everyone else.",
            self.job,
            self.namespace
                .as_deref()
                .map(|n| format!(" in `{n}`"))
                .unwrap_or_default(),
            self.started.format("%H:%M"),
            self.followed_by,
            self.lag_minutes
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Job, self.job.clone()))
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.job == other.job
    }

    fn step(&self, _scene: &Scene) -> String {
        let namespace = self.namespace.as_deref().unwrap_or("<namespace>");
        let pause = match &self.cronjob {
            Some(cronjob) => format!(
                "suspend it if it must wait (`kubectl -n {namespace} patch cronjob {cronjob} -p \
                 '{{\"spec\":{{\"suspend\":true}}}}'`, then delete job `{}`)",
                self.job
            ),
            None => format!(
                "stop it if it must wait (`kubectl -n {namespace} delete job {}`)",
                self.job
            ),
        };
        format!(
            "Find how hard Job `{}` drives what it calls (its concurrency, batch size, rate), and \
             throttle it, or {pause}.",
            self.job
        )
    }

    /// The rise it is named with, and those of work that came with it (within the clocks'
    /// skew of it): one load arriving shows in several series at once.
    fn explains(&self, effect: &Finding) -> bool {
        let (series, at) = match &effect.fact {
            Fact::MetricStep(m) if m.after > m.before && !m.series.starts_with("kube_") => {
                (&m.series, m.at)
            }
            Fact::LoadGrowth(l) => (&l.series, l.at),
            _ => return false,
        };
        let rose = self.started + Duration::minutes(self.lag_minutes);
        *series == self.followed_by || (at - rose).abs() <= SKEW
    }
}

/// What rose: a load growth first, then the steps up in series that measure work (not an
/// object's state as kube-state-metrics reports it: replicas, conditions), earliest first — a
/// job is named with the first rise that followed it, where its load arrived — with their
/// series and when.
fn rises(round: &Round<'_>) -> Vec<(String, DateTime<Utc>)> {
    let load = round.found.iter().filter_map(|f| match &f.fact {
        Fact::LoadGrowth(l) => Some((l.series.clone(), l.at)),
        _ => None,
    });
    let mut steps: Vec<(String, DateTime<Utc>)> = round
        .found
        .iter()
        .filter_map(|f| match &f.fact {
            Fact::MetricStep(m) if m.after > m.before && !m.series.starts_with("kube_") => {
                Some((m.series.clone(), m.at))
            }
            _ => None,
        })
        .collect();
    steps.sort_by_key(|(_, at)| *at);
    load.chain(steps).collect()
}

/// A Job's start, if it has one.
fn started(job: &Value) -> Option<DateTime<Utc>> {
    kube::str_at(job, "/status/startTime")
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// Still running at `at`: active, or finished after it.
fn running_at(job: &Value, at: DateTime<Utc>) -> bool {
    let active = job
        .pointer("/status/active")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        > 0;
    let finished_after = kube::str_at(job, "/status/completionTime")
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .is_some_and(|t| t.with_timezone(&Utc) > at);
    active || finished_after
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let rises = rises(round);
    let jobs = round.objects("Job");
    let mut out: Vec<Finding> = Vec::new();
    for (series, at) in &rises {
        let suspects: Vec<(&crate::evidence::Evidence, &Value, DateTime<Utc>)> = jobs
            .iter()
            .filter_map(|(e, job)| started(job).map(|s| (*e, *job, s)))
            .filter(|(_, job, s)| {
                *s <= *at + SKEW && *at - *s <= BEFORE_STEP && running_at(job, *at)
            })
            .collect();
        let alone = suspects.len() == 1;
        for (evidence, job, start) in suspects {
            let Some(name) = kube::str_at(job, "/metadata/name") else {
                continue;
            };
            if out.iter().any(|f| f.resource().as_deref() == Some(name)) {
                continue;
            }
            let cronjob = kube::owner_of(job, "CronJob").map(str::to_string);
            let quote = evidence
                .excerpt
                .lines()
                .find(|l| l.contains("startTime") && l.contains(&start.format("%H:%M").to_string()))
                .or_else(|| evidence.excerpt.lines().find(|l| l.contains(name)))
                .map(quote_line);
            let Some(quote) = quote else {
                continue;
            };
            out.push(
                Finding::new(
                    BatchStarted {
                        job: name.to_string(),
                        namespace: kube::str_at(job, "/metadata/namespace").map(str::to_string),
                        cronjob,
                        started: start,
                        followed_by: series.clone(),
                        lag_minutes: (*at - start).num_minutes().max(0),
                    },
                    Confidence::Medium,
                    alone,
                )
                .dated(Some(start))
                .citing(vec![cite(evidence, quote)]),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests;
