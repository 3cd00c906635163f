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
//! With a model configured, `model_path` adds the model's quote-checked causes and observations
//! to this report after the round is posted; this template is what is posted first and what
//! stands when the model fails.

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
use crate::catalogue;

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
    if let Some(heartbeat) = heartbeat(&state.alert) {
        return Report {
            headline: headline(&state.alert),
            heartbeat: Some(heartbeat),
            ..Report::default()
        };
    }
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
        heartbeat: None,
    }
}

/// What a heartbeat alert means, when the alert is one of the catalogue's heartbeats.
fn heartbeat(alert: &AlertInput) -> Option<String> {
    let name = alert.target.alertname.as_deref()?;
    if !catalogue::is_heartbeat(name) {
        return None;
    }
    let meaning = catalogue::lookup(name)
        .and_then(|rule| rule.meaning.clone().or_else(|| rule.description.clone()))
        .unwrap_or_else(|| "This alert fires on purpose.".to_string());
    Some(format!(
        "`{name}` is a heartbeat: it always fires, on purpose, to prove the alerting pipeline \
         works end to end. {meaning} Nothing to investigate; worry when it stops arriving."
    ))
}

/// Findings that show *that* something is wrong, not why.
fn is_symptom(finding: &Finding) -> bool {
    matches!(
        finding.detector,
        DetectorKind::CrashLoop
            | DetectorKind::JobFailed
            | DetectorKind::MetricStepChange
            | DetectorKind::ExitCode
            | DetectorKind::MemoryGrowth
            | DetectorKind::CpuThrottling
            | DetectorKind::RestartTrend
            | DetectorKind::MetricSpike
            | DetectorKind::VolumeClaim
            | DetectorKind::Recovered
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detectors::Confidence;
    use firstline_model::ThreadContext;

    fn state(alert: &str) -> IncidentState {
        IncidentState::new(AlertInput::parse(alert, None), ThreadContext::default())
    }

    fn crash_loop() -> Finding {
        Finding {
            detector: DetectorKind::CrashLoop,
            title: "Container `api` crash-looping (CrashLoopBackOff)".to_string(),
            detail: "Container `api` is crash-looping.".to_string(),
            confidence: Confidence::High,
            verified: false,
            resource: Some("api-7d9f8c6b5-x2k4q".to_string()),
            refs: Vec::new(),
            at: None,
        }
    }

    #[test]
    fn a_heartbeat_alert_is_answered_as_a_heartbeat_with_no_causes_or_steps() {
        for name in ["Watchdog", "InfoInhibitor"] {
            let mut heartbeat_state = state(&format!(
                "alertname={name} namespace=monitoring severity=none"
            ));
            // Whatever a round may hold, a heartbeat's report lists nothing to act on.
            heartbeat_state.findings.push(crash_loop());
            let report = build_report(&heartbeat_state);
            let text = report.heartbeat.as_deref().expect("a heartbeat");
            assert!(
                text.starts_with(&format!(
                    "`{name}` is a heartbeat: it always fires, on purpose, to prove the alerting \
                     pipeline works end to end."
                )),
                "{text}"
            );
            assert!(
                text.ends_with("Nothing to investigate; worry when it stops arriving."),
                "{text}"
            );
            let rule = catalogue::lookup(name).expect("in the catalogue");
            let meaning = rule
                .meaning
                .clone()
                .or_else(|| rule.description.clone())
                .expect("the catalogue says what it means");
            assert!(text.contains(meaning.trim()), "{text}");
            assert!(report.headline.starts_with(name), "{}", report.headline);
            assert!(report.causes.is_empty());
            assert!(report.observations.is_empty());
            assert!(report.next_steps.is_empty());
        }
    }

    #[test]
    fn an_ordinary_alert_is_not_answered_as_a_heartbeat() {
        let mut crash = state(
            "alertname=KubePodCrashLooping namespace=default pod=api-7d9f8c6b5-x2k4q severity=critical",
        );
        crash.findings.push(crash_loop());
        let report = build_report(&crash);
        assert_eq!(report.heartbeat, None);
        assert_eq!(report.observations.len(), 1);
        assert!(!report.next_steps.is_empty());
    }
}
