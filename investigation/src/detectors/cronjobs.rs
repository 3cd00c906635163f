//! A CronJob that cannot run because of its own spec: `suspend: true`. The controller creates
//! no Job, so nothing fails — the run the alert waited for never started, and only the
//! CronJob's spec says why.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`CronJobSuspended`] | cause | the CronJob the round read on its own (not one of a list) has `spec.suspend: true` |
//!
//! What explains what: nothing else; an old run's failure (yesterday's Job) is not why tonight's
//! run did not happen.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::text::quote_line;
use super::{
    Confidence, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom, cite,
};
use crate::evidence::Capability;
use crate::kube;

/// A CronJob suspended in its spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronJobSuspended {
    pub cronjob: String,
    pub schedule: Option<String>,
    /// When it last created a Job, if it ever did.
    pub last_scheduled: Option<DateTime<Utc>>,
}

impl Payload for CronJobSuspended {
    const SPEC: KindSpec = KindSpec {
        name: "cronjob-suspended",
        role: Role::Cause,
        verified_when: "the CronJob read on its own has spec.suspend: true",
        accounts_for: &[Symptom::JobFailed],
    };

    fn example() -> Self {
        Self {
            cronjob: "invoice-dunning".into(),
            schedule: Some("15 2 * * *".into()),
            last_scheduled: None,
        }
    }

    fn title(&self) -> String {
        let since = self.last_scheduled.map_or_else(
            || ": it has created no Job".to_string(),
            |at| {
                format!(
                    ": no Job since its last run at {} UTC",
                    at.format("%m-%d %H:%M")
                )
            },
        );
        format!(
            "CronJob `{}` is suspended (`suspend: true`){since}",
            self.cronjob
        )
    }

    fn detail(&self) -> String {
        let schedule = self
            .schedule
            .as_deref()
            .map_or(String::new(), |s| format!(" (schedule `{s}`)"));
        format!(
            "CronJob `{}`{schedule} has `spec.suspend: true`: the controller creates no Job for \
             it, so its runs do not fail — they never start.",
            self.cronjob
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Job, self.cronjob.clone()))
    }

    fn step(&self, scene: &Scene) -> String {
        let name = &self.cronjob;
        let namespace = &scene.namespace;
        format!(
            "If it should run, resume it (`kubectl -n {namespace} patch cronjob {name} -p \
             '{{\"spec\":{{\"suspend\":false}}}}'`) and start the missed run by hand (`kubectl -n \
             {namespace} create job --from=cronjob/{name} {name}-manual`)."
        )
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    round
        .objects("CronJob")
        .into_iter()
        .filter(|(evidence, _)| evidence.capability == Capability::ObjectGet)
        .filter(|(_, cron)| cron.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true))
        .filter_map(|(evidence, cron)| {
            let name = kube::str_at(cron, "/metadata/name")?;
            let line = evidence
                .excerpt
                .lines()
                .find(|l| l.trim_start().starts_with("suspend: true"))?;
            Some(
                Finding::new(
                    CronJobSuspended {
                        cronjob: name.to_string(),
                        schedule: kube::str_at(cron, "/spec/schedule").map(str::to_string),
                        last_scheduled: kube::str_at(cron, "/status/lastScheduleTime")
                            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                            .map(|t| t.with_timezone(&Utc)),
                    },
                    Confidence::High,
                    true,
                )
                .citing(vec![cite(evidence, quote_line(line))]),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;
