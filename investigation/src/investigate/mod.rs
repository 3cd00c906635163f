//! The `investigate` node: the fixed first-level steps (steps 3–5 of the seven in
//! ARCHITECTURE.md, and the alert's own metric), each tool result turned into evidence `E1…`, then the deterministic detectors.
//!
//! The steps, in this order, each from what the alert names:
//!
//! 1. describe the pod; when the alert is about a Kubernetes Job, describe the Job and, when no
//!    pod is named, list its pods (`job-name=<job>`) and read the current log and the events of
//!    at most [`MAX_JOB_PODS`] failed ones, newest first;
//! 2. the *previous* container's log, when the pod restarted (restart count > 0, last state
//!    terminated, or CrashLoopBackOff in the description), or when the description could not
//!    be read (then nobody knows, and the previous log is the one that explains a crash);
//! 3. the current container's log;
//! 4. events for the pod (else the workload);
//! 5. the workload's deploy history (not for a Job or CronJob, which have none);
//! 6. the alert's own expression as a range query over the alert window.
//!
//! A step whose target the alert does not name is skipped and recorded as missing with the
//! reason; pods are never guessed from a deployment or service name (a Job's pods are found by
//! its `job-name` label). Evidence ids are assigned in call order, so the same alert against the
//! same world yields the same ids.
//!
//! Layout: `steps` decides what to ask for from the alert; `pods` reads the pod lists and pod
//! descriptions the tools return ([`failed_job_pods`], [`restart_signal`]); `collect` holds the
//! [`Collector`], which makes the requests and keeps their results as evidence or missing
//! evidence within the round's budget.
//!
//! Model seam: when a model is configured, a bounded ReAct leaf over the allowlisted tools runs
//! after the fixed steps, appending its own evidence through the same [`Collector`]; the fixed
//! steps and detectors stay as they are.

mod collect;
mod pods;
mod steps;

use std::time::Duration;

use tracing::Instrument;

use crate::detectors::{DetectionContext, run_detectors};
use crate::excerpt::ExcerptLimits;
use crate::tools::EvidenceSource;

use super::state::{IncidentState, IncidentUpdate, Usage};
use steps::fixed_steps;

pub use collect::Collector;
pub use pods::{failed_job_pods, restart_signal};
pub use steps::MAX_JOB_PODS;

/// Bounds of the fixed steps.
#[derive(Debug, Clone, PartialEq)]
pub struct InvestigateOptions {
    /// Excerpt sizes: per item and per round (default 3,500 / 40,000 characters).
    pub limits: ExcerptLimits,
    /// Lines requested from the end of a container log.
    pub tail_lines: u32,
    /// Longest wait for one evidence request; a request still running then is missing
    /// evidence, not a failed round. The tool layer has its own per-call timeout too.
    pub fetch_timeout: Duration,
    /// The alert window starts this long before the alert's start.
    pub window_before: chrono::Duration,
    /// … and ends this long after it.
    pub window_after: chrono::Duration,
    /// Resolution of the metric range query.
    pub metric_step_secs: u32,
}

impl Default for InvestigateOptions {
    fn default() -> Self {
        Self {
            limits: ExcerptLimits::default(),
            tail_lines: 300,
            fetch_timeout: Duration::from_secs(20),
            window_before: chrono::Duration::minutes(30),
            window_after: chrono::Duration::minutes(15),
            metric_step_secs: 60,
        }
    }
}

/// Runs the fixed steps against `source` and the detectors over what they returned.
pub async fn investigate<E: EvidenceSource>(
    source: &E,
    state: &IncidentState,
    options: &InvestigateOptions,
) -> IncidentUpdate {
    let target = &state.alert.target;
    let span = tracing::info_span!(
        "incident.investigate",
        alertname = target.alertname.as_deref().unwrap_or(""),
        namespace = target.namespace.as_deref().unwrap_or(""),
        pod = target.pod.as_deref().unwrap_or(""),
        evidence = tracing::field::Empty,
        missing = tracing::field::Empty,
        findings = tracing::field::Empty,
    );
    async {
        let first_id = u32::try_from(state.evidence.len())
            .unwrap_or(u32::MAX - 1)
            .saturating_add(1);
        let mut steps = Collector::new(source, options, first_id);
        fixed_steps(&mut steps, state, options).await;

        let mut ctx = DetectionContext::for_alert(target);
        ctx.alert_start = state.alert.anchor();
        let findings = run_detectors(&steps.evidence, &ctx);

        let current = tracing::Span::current();
        current.record("evidence", steps.evidence.len());
        current.record("missing", steps.missing.len());
        current.record("findings", findings.len());
        IncidentUpdate::default()
            .evidence(steps.evidence)
            .missing(steps.missing)
            .findings(findings)
            .usage(Usage {
                tool_calls: steps.calls,
                ..Usage::default()
            })
    }
    .instrument(span)
    .await
}
