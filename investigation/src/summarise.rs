//! The `summarise` node: the report, from templates over the detectors' findings (ARCHITECTURE.md,
//! invariant 10: an on-call engineer gets an answer with no model).
//!
//! - what happened: one line from the alert;
//! - causes: detector-verified findings, stated as confirmed; when none is verified, the
//!   suspicions, each with its confidence and detector — never more certain than the detector;
//! - observations: symptoms (crash loop, failed job, metric step, an exit code with no reason);
//! - claims: one per citation of a finding, quoting the detector's verbatim line (≤ 200 chars);
//! - what is missing, next steps per finding, similar past incidents.
//!
//! When a verified cause exists, unverified suspicions other than a deploy inside the window are
//! left out of the post (they stay in the findings): a warning line next to the real cause is
//! noise at 4 a.m.
//!
//! Model seam: with a model configured, the model writes the report as structured output from
//! the same inputs (schema from these types, validated on return, one re-ask); this template
//! remains the fallback when it fails.

use chrono::{DateTime, Utc};
use firstline_alert::title::first_line;
use firstline_model::text::prefix;
use tracing::Instrument;

use crate::detectors::{DetectorKind, Finding};
use crate::evidence::Evidence;
use firstline_alert::{AlertStatus, AlertTarget};

use super::next_steps::next_steps;
use super::report::{Cause, Claim, MAX_REPORT_QUOTE_CHARS, Report};
use super::state::{AlertInput, IncidentState, IncidentUpdate};

/// The summarise node's body.
pub async fn summarise(state: &IncidentState) -> IncidentUpdate {
    let span = tracing::info_span!("incident.summarise", causes = tracing::field::Empty);
    async {
        let report = build_report(state);
        tracing::Span::current().record("causes", report.causes.len());
        IncidentUpdate::default().report(Some(report))
    }
    .instrument(span)
    .await
}

/// The report for a state whose investigation and recall are done.
pub fn build_report(state: &IncidentState) -> Report {
    let any_verified = state.findings.iter().any(|f| f.verified);
    let mut causes = Vec::new();
    let mut observations = Vec::new();
    for finding in &state.findings {
        let cause = cause_of(finding, &state.evidence);
        if finding.verified {
            causes.push(cause);
        } else if is_symptom(finding) {
            observations.push(cause);
        } else if !any_verified || finding.detector == DetectorKind::DeployInWindow {
            causes.push(cause);
        }
    }
    Report {
        headline: headline(&state.alert),
        next_steps: next_steps(state),
        causes,
        observations,
        missing: state.missing.clone(),
        similar: state.prior_incidents.clone(),
    }
}

/// Findings that show *that* something is wrong, not why.
fn is_symptom(finding: &Finding) -> bool {
    matches!(
        finding.detector,
        DetectorKind::CrashLoop
            | DetectorKind::JobFailed
            | DetectorKind::MetricStepChange
            | DetectorKind::ExitCode
    )
}

fn cause_of(finding: &Finding, evidence: &[Evidence]) -> Cause {
    let claims = finding
        .refs
        .iter()
        .filter_map(|citation| {
            let quote = short_quote(&citation.quote);
            if quote.is_empty() {
                return None;
            }
            let source = evidence
                .iter()
                .find(|e| e.id == citation.evidence)
                .map_or("evidence", |e| e.capability.label());
            Some(Claim {
                statement: format!("{} ({source})", finding.title),
                evidence: vec![citation.evidence],
                quote,
            })
        })
        .collect();
    Cause {
        statement: finding.title.clone(),
        detail: finding.detail.clone(),
        detector: Some(finding.detector),
        confidence: finding.confidence,
        confirmed: finding.verified,
        claims,
    }
}

/// A verbatim prefix of `quote`, trimmed, at most [`MAX_REPORT_QUOTE_CHARS`] characters.
pub fn short_quote(quote: &str) -> String {
    prefix(quote.trim(), MAX_REPORT_QUOTE_CHARS)
        .trim_end()
        .to_string()
}

/// What happened, in one line: alert name, subject, namespace, start, summary.
pub fn headline(alert: &AlertInput) -> String {
    let target = &alert.target;
    let Some(name) = target.alertname.as_deref().or(target.summary.as_deref()) else {
        let first = match first_line(&alert.text) {
            "" => "An alert with no text",
            line => line,
        };
        return format!("Alert: {}", short_quote(first));
    };
    let mut line = String::new();
    if target.status == Some(AlertStatus::Resolved) {
        line.push_str("Resolved: ");
    }
    line.push_str(name);
    if let Some(subject) = subject(target) {
        line.push_str(&format!(" on `{subject}`"));
    }
    match &target.namespace {
        Some(ns) => line.push_str(&format!(" in `{ns}`")),
        None => line.push_str(" (namespace unknown)"),
    }
    if let Some(at) = target.starts_at {
        line.push_str(&format!(" since {}", clock(at)));
    }
    if let Some(summary) = target.summary.as_deref().filter(|s| *s != name) {
        line.push_str(&format!(": {}", short_quote(summary)));
    }
    line
}

/// The most specific thing the alert is about: pod, else workload, else service.
pub(crate) fn subject(target: &AlertTarget) -> Option<&str> {
    target
        .pod
        .as_deref()
        .or(target.workload.as_deref())
        .or(target.service.as_deref())
}

/// `14:02 UTC`.
pub(crate) fn clock(at: DateTime<Utc>) -> String {
    at.format("%H:%M UTC").to_string()
}

/// `around 14:02 UTC`, or `around when the alert fired`.
pub(crate) fn around(alert: &AlertInput) -> String {
    match alert.anchor() {
        Some(at) => format!("around {}", clock(at)),
        None => "around when the alert fired".to_string(),
    }
}
