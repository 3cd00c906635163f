//! The `summarise` node: the report, from templates over the detectors' findings (ARCHITECTURE.md,
//! "Works with no model": an on-call engineer gets an answer with no model).
//!
//! The findings are read as a story first ([`crate::explain`]): a verified cause that explains
//! the alert's symptom, with everything it explains shown under it (one chain is one cause,
//! told once), heads the report. A symptom, a consequence or context never heads it; with no
//! verified cause, the unverified suspicions are listed, strongest first, and the first line
//! names the strongest lead. Everything else the round saw is an observation.
//!
//! - what happened: one line from the alert;
//! - causes: each chain's cause, stated as confirmed, with what it explains and what led to
//!   it; claims quote the detector's verbatim lines;
//! - observations: symptoms, consequences and context outside every chain;
//! - what is missing, next steps from the chains' payloads ([`super::next_steps`]), similar
//!   past incidents;
//! - the proposal: at most one reversible action the headline's verified cause supports
//!   ([`super::propose`]), kept out of the text (the worker shows it as buttons).
//!
//! When a cause is confirmed, unverified suspicions other than a deploy inside the window are
//! left out of the post (they stay in the findings): a warning line next to the real cause is
//! noise at 4 a.m.
//!
//! With a model configured, `model_path` adds the model's quote-checked causes and observations
//! to this report after the round is posted; this template is what is posted first and what
//! stands when the model fails.

use firstline_alert::title::first_line;
use tracing::Instrument;

use crate::detectors::{Finding, Kind, Role, Standing, alert_symptom};
use crate::evidence::Evidence;
use crate::explain::{Chain, Explanation, explain};
use firstline_alert::AlertStatus;

use super::next_steps::next_steps;
use super::propose::propose;
use super::report::{Cause, Claim, Report};
use super::root::root;
use super::state::{AlertInput, IncidentState, IncidentUpdate};
use crate::catalogue;
use crate::detectors::text::quote_line;

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

/// The findings of `state` as a story: chains for the alert's symptom.
pub fn story(state: &IncidentState) -> Explanation<'_> {
    explain(&state.findings, alert_symptom(&state.alert.target))
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
    let story = story(state);
    let evidence = &state.evidence;
    let mut causes: Vec<Cause> = story
        .chains
        .iter()
        .map(|chain| chain_cause(chain, evidence))
        .collect();
    let mut observations = Vec::new();
    let confirmed = !causes.is_empty();
    for finding in &story.rest {
        let suspect = finding.role() == Role::Cause && !finding.verified;
        if suspect && !confirmed {
            causes.push(cause_of(finding, evidence));
        } else if suspect && finding.kind() != Kind::Rollout {
            // Beside a confirmed cause, a suspicion is noise (a deploy inside the window is
            // worth a line).
            continue;
        } else {
            observations.push(observation_of(finding, evidence));
        }
    }
    // With no confirmed cause, the alert's own metric back is the answer: what it saw has
    // ended. Suspicions become context, and nothing is proposed.
    let recovered = state
        .findings
        .iter()
        .filter(|_| !confirmed)
        .find(|f| f.verified && f.standing == Standing::Current && f.kind() == Kind::Recovered)
        .map(|f| cause_of(f, evidence));
    if let Some(recovered) = &recovered {
        observations.extend(causes.drain(..).map(|mut c| {
            c.confirmed = false;
            c
        }));
        observations.retain(|o| o.statement != recovered.statement);
    }
    let lead = (causes.is_empty() && recovered.is_none())
        .then(|| story.lead.map(Finding::title))
        .flatten();
    let next_steps = match state
        .findings
        .iter()
        .find(|f| recovered.is_some() && f.kind() == Kind::Recovered && f.verified)
    {
        Some(finding) => vec![finding.fact.step(&crate::next_steps::scene(state, false))],
        None => next_steps(state, &story),
    };
    // A recovered alert roots nothing: what it saw has ended.
    let root = match recovered {
        Some(_) => None,
        None => {
            // The quote itself: the round's evidence ids mean nothing in a thread that never
            // shows its report.
            let cited = causes
                .first()
                .and_then(|cause| cause.claims.first())
                .map(|claim| format!("\u{201c}{}\u{201d}", claim.quote));
            root(&story, &state.alert.target, cited)
        }
    };
    Report {
        headline: headline(&state.alert),
        next_steps,
        causes,
        observations,
        lead,
        missing: state.missing.clone(),
        similar: state.prior_incidents.clone(),
        heartbeat: None,
        recovered,
        proposal: propose(&story, &state.findings, evidence, &state.alert.target),
        root,
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

/// A chain as a report cause: its cause, stated as confirmed (with the link to the alert's
/// symptom when the cause does not name it), and under it what it explains and what led to it.
fn chain_cause(chain: &Chain<'_>, evidence: &[Evidence]) -> Cause {
    let mut cause = cause_of(chain.cause, evidence);
    if let Some(via) = chain.via {
        cause.statement = format!("{}, so {}", cause.statement, lower_first(&via.title()));
    }
    cause.confidence = chain.confidence;
    cause.explains = chain
        .explained
        .iter()
        .map(|f| cause_of(f, evidence))
        .collect();
    cause.led_by = chain.led_by.iter().map(|f| cause_of(f, evidence)).collect();
    cause
}

/// A finding outside every chain, as an observation: a verified cause that does not explain
/// the alert's symptom is not confirmed as its cause.
fn observation_of(finding: &Finding, evidence: &[Evidence]) -> Cause {
    let mut cause = cause_of(finding, evidence);
    cause.confirmed = false;
    if finding.is_verified_cause() {
        cause.detail = format!(
            "{} (Verified, but it does not explain what the alert reports: context.)",
            cause.detail
        );
    }
    cause
}

fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) if chars.clone().next().is_some_and(char::is_lowercase) => {
            first.to_lowercase().chain(chars).collect()
        }
        _ => text.to_string(),
    }
}

fn cause_of(finding: &Finding, evidence: &[Evidence]) -> Cause {
    let title = finding.title();
    let claims = finding
        .refs
        .iter()
        .filter_map(|citation| {
            let quote = quote_line(&citation.quote);
            if quote.is_empty() {
                return None;
            }
            let source = evidence
                .iter()
                .find(|e| e.id == citation.evidence)
                .map_or("evidence", |e| e.capability.label());
            Some(Claim {
                statement: format!("{title} ({source})"),
                evidence: vec![citation.evidence],
                quote,
            })
        })
        .collect();
    Cause {
        statement: title,
        detail: finding.detail(),
        detector: Some(finding.kind()),
        confidence: finding.confidence,
        confirmed: finding.is_verified_cause(),
        claims,
        explains: Vec::new(),
        led_by: Vec::new(),
    }
}

/// What happened, in one line: alert name, subject, namespace, start, summary.
pub fn headline(alert: &AlertInput) -> String {
    let target = &alert.target;
    let Some(name) = target.alertname.as_deref().or(target.summary.as_deref()) else {
        let first = match first_line(&alert.text) {
            "" => "An alert with no text",
            line => line,
        };
        return format!("Alert: {}", quote_line(first));
    };
    let mut line = String::new();
    if target.status == Some(AlertStatus::Resolved) {
        line.push_str("Resolved: ");
    }
    line.push_str(name);
    if let Some(subject) = alert.subject() {
        line.push_str(&format!(" on `{subject}`"));
    }
    match &target.namespace {
        Some(ns) => line.push_str(&format!(" in `{ns}`")),
        None => line.push_str(" (namespace unknown)"),
    }
    if let Some(at) = target.starts_at {
        line.push_str(&format!(" since {}", crate::state::clock(at)));
    }
    if let Some(summary) = target.summary.as_deref().filter(|s| *s != name) {
        line.push_str(&format!(": {}", quote_line(summary)));
    }
    line
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
        Finding::new(Kind::CrashLoop.example(), Confidence::High, false)
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
