//! Deterministic detectors: evidence in, cited findings out (ARCHITECTURE.md, invariant 10).
//!
//! Each detector reads evidence excerpts line by line and reports a [`Finding`] only when it
//! sees a *structural* signal — a status field, a kubelet/scheduler event, an exit code, a
//! metric series — and every finding cites the lines that prove it: each [`Citation`] quote is
//! a verbatim substring of the cited evidence's excerpt, so the judge's quote check always
//! passes for detector output.
//!
//! Findings are either *verified causes* (OOMKilled, image pull failure, unschedulable, config
//! errors, a crash explained by its last log line, …) or *symptoms* (crash loop, job failed,
//! a metric step). Lines written by applications (logs) never make a verified finding on their
//! own: they explain a failure only when the control plane shows one happened (a container
//! terminated, restarted, or a job failed), and text that tries to instruct the reader is
//! ignored. That keeps a log line saying "report that the cause is DNS" from becoming a cause.
//!
//! The graph's investigate node calls [`run_detectors`] with all evidence of the round; results
//! are merged per (detector, resource) and ranked: verified causes first, by confidence.

mod deploy;
mod logs;
mod metric;
mod pod;
pub mod text;

use std::fmt;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::evidence::{Evidence, EvidenceId};
use firstline_alert::AlertTarget;

pub use deploy::detect_deploys_in_window;
pub use metric::{MetricSeries, StepChange, find_step_change, parse_prometheus_matrix};

/// Which detector produced a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectorKind {
    OomKilled,
    ConfigError,
    ImagePull,
    Unschedulable,
    CertificateError,
    DependencyError,
    DiskPressure,
    ExitCode,
    ProbeFailure,
    DeployInWindow,
    MetricStepChange,
    JobFailed,
    CrashLoop,
}

impl fmt::Display for DetectorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DetectorKind::OomKilled => "oom-killed",
            DetectorKind::ConfigError => "config-error",
            DetectorKind::ImagePull => "image-pull",
            DetectorKind::Unschedulable => "unschedulable",
            DetectorKind::CertificateError => "certificate",
            DetectorKind::DependencyError => "dependency-connection",
            DetectorKind::DiskPressure => "disk-pressure",
            DetectorKind::ExitCode => "exit-code",
            DetectorKind::ProbeFailure => "probe-failure",
            DetectorKind::DeployInWindow => "deploy-in-window",
            DetectorKind::MetricStepChange => "metric-step-change",
            DetectorKind::JobFailed => "job-failed",
            DetectorKind::CrashLoop => "crash-loop",
        })
    }
}

/// How sure the detector is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

/// A verbatim quote from one evidence item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Citation {
    pub evidence: EvidenceId,
    pub quote: String,
}

/// What a detector found, with the evidence that proves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub detector: DetectorKind,
    /// Short headline, e.g. "Container `api` crash-looping: exit code 78".
    pub title: String,
    /// One or two sentences for the report.
    pub detail: String,
    pub confidence: Confidence,
    /// A detector-verified cause (true) or a symptom / suspicion (false). Only verified causes
    /// may be stated as confirmed.
    pub verified: bool,
    /// The pod, container, job or deployment the finding is about.
    pub resource: Option<String>,
    pub refs: Vec<Citation>,
    /// When it happened, when the detector can tell (deploy time, step start).
    pub at: Option<DateTime<Utc>>,
}

/// Thresholds for the metric step-change detector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepChangeParams {
    /// Points required on each side of the change.
    pub min_points_each_side: usize,
    /// After/before median ratio required.
    pub min_ratio: f64,
    /// After − before median required, in the series' unit.
    pub min_absolute_increase: f64,
    /// Share of points after the change that must stay above the midpoint ("sustained").
    pub min_sustained_share: f64,
}

impl Default for StepChangeParams {
    fn default() -> Self {
        Self {
            min_points_each_side: 3,
            min_ratio: 2.0,
            min_absolute_increase: 0.01,
            min_sustained_share: 0.8,
        }
    }
}

/// What the detectors need besides evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectionContext {
    /// When the alert started; bounds the deploy window.
    pub alert_start: Option<DateTime<Utc>>,
    /// How long before the alert start a deploy counts as "inside the window".
    pub deploy_window_before: Duration,
    /// Grace after the alert start (clock skew between systems).
    pub deploy_window_after: Duration,
    /// A metric step starting this soon after a deploy ties the two together.
    pub deploy_step_correlation: Duration,
    pub step: StepChangeParams,
    /// The resource to name when evidence does not say (pod, else workload, from the alert).
    pub default_resource: Option<String>,
}

impl Default for DetectionContext {
    fn default() -> Self {
        Self {
            alert_start: None,
            deploy_window_before: Duration::minutes(30),
            deploy_window_after: Duration::minutes(2),
            deploy_step_correlation: Duration::minutes(15),
            step: StepChangeParams::default(),
            default_resource: None,
        }
    }
}

impl DetectionContext {
    /// Context for an alert: its start time and its pod/workload as the default resource.
    pub fn for_alert(target: &AlertTarget) -> Self {
        Self {
            alert_start: target.starts_at,
            default_resource: target
                .pod
                .clone()
                .or_else(|| target.workload.clone())
                .or_else(|| target.service.clone()),
            ..Self::default()
        }
    }
}

/// Runs every detector over the round's evidence and returns merged, ranked findings.
pub fn run_detectors(evidence: &[Evidence], ctx: &DetectionContext) -> Vec<Finding> {
    let mut findings = Vec::new();
    // Kubernetes' own views first, so merged findings lead with their cleanest quotes.
    let mut by_view: Vec<&Evidence> = evidence.iter().collect();
    by_view.sort_by_key(|e| match e.capability {
        crate::evidence::Capability::PodDescribe
        | crate::evidence::Capability::WorkloadDescribe => 0,
        crate::evidence::Capability::Events => 1,
        _ => 2,
    });
    for item in by_view {
        findings.extend(pod::detect(item, ctx));
    }
    // Log lines explain a failure only when the control plane shows one happened.
    let failure_observed = findings.iter().any(|f| {
        matches!(
            f.detector,
            DetectorKind::CrashLoop
                | DetectorKind::OomKilled
                | DetectorKind::ExitCode
                | DetectorKind::JobFailed
        )
    });
    findings.extend(logs::detect(evidence, ctx, failure_observed));
    pod::attach_crash_lines(&mut findings, evidence, ctx);
    findings.extend(deploy::detect_deploys_in_window(evidence, ctx));
    for item in evidence {
        findings.extend(metric::detect(item, ctx));
    }
    deploy::correlate_with_steps(&mut findings, ctx);
    let mut merged = merge(findings);
    rank_findings(&mut merged);
    merged
}

/// Verified causes first, then by confidence, then by how specific the detector is.
pub fn rank_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.verified
            .cmp(&a.verified)
            .then(b.confidence.cmp(&a.confidence))
            .then(a.detector.cmp(&b.detector))
    });
}

/// Joins findings of the same detector about the same resource (e.g. a crash loop seen in the
/// describe output and in events): the stronger one is kept, citations are pooled.
fn merge(findings: Vec<Finding>) -> Vec<Finding> {
    const MAX_REFS: usize = 4;
    let mut out: Vec<Finding> = Vec::new();
    for finding in findings {
        let same = out.iter_mut().find(|f| {
            f.detector == finding.detector
                && match f.detector {
                    // One finding per dependency endpoint / per deploy, whichever pod saw it.
                    DetectorKind::DependencyError | DetectorKind::DeployInWindow => {
                        f.title == finding.title
                    }
                    // Readiness and liveness failures are different findings.
                    DetectorKind::ProbeFailure => {
                        f.title.split_whitespace().next() == finding.title.split_whitespace().next()
                            && same_resource(f.resource.as_deref(), finding.resource.as_deref())
                    }
                    _ => same_resource(f.resource.as_deref(), finding.resource.as_deref()),
                }
        });
        match same {
            Some(existing) => {
                let (mut keep, other) = if (finding.verified, finding.confidence)
                    > (existing.verified, existing.confidence)
                {
                    (finding, existing.clone())
                } else {
                    (existing.clone(), finding)
                };
                for citation in other.refs {
                    if keep.refs.len() < MAX_REFS && !keep.refs.contains(&citation) {
                        keep.refs.push(citation);
                    }
                }
                if keep.resource.is_none() {
                    keep.resource = other.resource;
                }
                *existing = keep;
            }
            None => out.push(finding),
        }
    }
    out
}

/// Resources match when equal, when one is unknown, or when one is a pod of the other
/// (`payments-api` and `payments-api-7d9f8c6b5-x2k4q`).
fn same_resource(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a == b || a.starts_with(&format!("{b}-")) || b.starts_with(&format!("{a}-"))
        }
        _ => true,
    }
}

/// A citation of `quote` in `evidence`. Callers pass text cut from the evidence's excerpt, so
/// the quote is verbatim by construction; the debug assertion guards that in tests.
pub(crate) fn cite(evidence: &Evidence, quote: String) -> Citation {
    debug_assert!(
        evidence.excerpt.contains(&quote),
        "quote must be verbatim: {quote:?}"
    );
    Citation {
        evidence: evidence.id,
        quote,
    }
}

#[cfg(test)]
mod tests;
