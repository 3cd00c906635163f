//! Jobs that failed: `BackoffLimitExceeded` (its pods failed until the backoff limit) or
//! `DeadlineExceeded` (it ran longer than `activeDeadlineSeconds`), from the Job's description,
//! object or events.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`JobFailed`] | symptom; a cause when it ran past its deadline | the Job controller reports `DeadlineExceeded` |
//!
//! A Job that ran past `activeDeadlineSeconds` was stopped by its deadline: that explains the
//! SIGTERM (exit 143) its pods got and their teardown lines; why it ran long is the next
//! question. A Job that reached its backoff limit is a symptom: its pods' failures say why.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::text::{field_value, matching_line, object_name, quote_from, quote_line};
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite, pod_of_job,
};

/// A Job's failure reason, or its controller's message. `DeadlineExceeded` alone is also a
/// gRPC status code (`rpc error: code = DeadlineExceeded`): only a reason field or the Job
/// controller's row counts.
static JOB_FAILED: LazyLock<Regex> = regex!(
    r"\bBackoffLimitExceeded\b|Job has reached the specified backoff limit|(?i:reason)\W{1,3}DeadlineExceeded\b|Warning\s+DeadlineExceeded\b|Job was active longer than specified deadline"
);

/// Why a Job failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobFailure {
    BackoffLimit,
    Deadline,
}

/// A Job that failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobFailed {
    pub job: Option<String>,
    pub reason: JobFailure,
}

impl Payload for JobFailed {
    const SPEC: KindSpec = KindSpec {
        name: "job-failed",
        role: Role::Symptom,
        verified_when: "the Job controller reports DeadlineExceeded (its deadline stopped it); \
                        BackoffLimitExceeded is the alert itself, not why",
        accounts_for: &[Symptom::JobFailed],
    };

    fn example() -> Self {
        Self {
            job: Some("nightly-report".into()),
            reason: JobFailure::BackoffLimit,
        }
    }

    fn title(&self) -> String {
        match self.reason {
            JobFailure::Deadline => format!(
                "{} failed: DeadlineExceeded, it ran past its activeDeadlineSeconds and was \
                 stopped",
                self.what()
            ),
            JobFailure::BackoffLimit => format!("{} failed: BackoffLimitExceeded", self.what()),
        }
    }

    fn role(&self) -> Role {
        match self.reason {
            JobFailure::Deadline => Role::Cause,
            JobFailure::BackoffLimit => Role::Symptom,
        }
    }

    fn detail(&self) -> String {
        let explanation = match self.reason {
            JobFailure::Deadline => "it ran longer than its active deadline",
            JobFailure::BackoffLimit => "its pods failed until the backoff limit was reached",
        };
        format!(
            "{} failed ({}): {explanation}.",
            self.what(),
            self.reason_name()
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Job, self.job.as_deref())
    }

    fn step(&self, scene: &Scene) -> String {
        let job = self
            .job
            .as_deref()
            .or(scene.workload.as_deref())
            .unwrap_or("<job>");
        match self.reason {
            JobFailure::Deadline => format!(
                "Find what held the run of `{job}` past its deadline (its log: `kubectl -n {} \
                 logs job/{job}`; a lock, a slow dependency, more data than usual) before \
                 raising `activeDeadlineSeconds`.",
                scene.namespace
            ),
            JobFailure::BackoffLimit => format!(
                "Read the failed job's log (`kubectl -n {} logs job/{job}`) and re-run it once \
                 fixed.",
                scene.namespace
            ),
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        let ours = |pod: &Option<String>| pod_of_job(pod.as_deref(), self.job.as_deref());
        self.reason == JobFailure::Deadline
            && match &effect.fact {
                Fact::Exited(e) => e.signalled() && ours(&e.pod),
                Fact::CrashLine(c) => c.after_signal && ours(&c.pod),
                _ => false,
            }
    }
}

impl JobFailed {
    fn what(&self) -> String {
        self.job
            .as_deref()
            .map_or("The job".to_string(), |j| format!("Job `{j}`"))
    }

    fn reason_name(&self) -> &'static str {
        match self.reason {
            JobFailure::BackoffLimit => "BackoffLimitExceeded",
            JobFailure::Deadline => "DeadlineExceeded",
        }
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (evidence, ctx) in round.structural() {
        let lines: Vec<&str> = evidence.excerpt.lines().collect();
        let Some(index) = matching_line(&lines, &JOB_FAILED) else {
            continue;
        };
        let line = lines[index];
        let matched = JOB_FAILED.find(line).map_or("", |m| m.as_str());
        let reason = if matched.contains("eadline") {
            JobFailure::Deadline
        } else {
            JobFailure::BackoffLimit
        };
        let limit = lines
            .iter()
            .position(|l| field_value(l, "backofflimit").is_some());
        let statuses = lines
            .iter()
            .position(|l| field_value(l, "podsstatuses").is_some());
        let job = object_name(evidence).or_else(|| ctx.default_resource.clone());
        let verified = reason == JobFailure::Deadline;
        let mut finding = Finding::new(JobFailed { job, reason }, Confidence::High, verified);
        finding.refs.push(cite(
            evidence,
            quote_from(line, line.find(matched).unwrap_or(0)),
        ));
        for i in [limit, statuses].into_iter().flatten() {
            finding.refs.push(cite(evidence, quote_line(lines[i])));
        }
        out.push(finding);
    }
    out
}

#[cfg(test)]
mod tests;
