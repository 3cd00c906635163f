//! The `judge` node: is the report grounded enough to post? (ARCHITECTURE.md, invariant 8.)
//!
//! Deterministic checks, in order, for every claim of every cause and observation:
//!
//! 1. it cites at least one evidence id, and every id exists in this round's evidence;
//! 2. its quote is non-empty and occurs (after whitespace/case normalisation,
//!    [`quote_occurs_in`]) in *each* evidence item it cites — an existing id is not enough;
//!
//! and for every cause: "confirmed" / "root cause is" language, or the `confirmed` flag, only
//! when a *verified* finding of the cause's detector cites the same evidence.
//!
//! Grounded iff no claim failed and at least one cause is detector-verified. Otherwise the
//! verdict carries the judge's doubts as questions and the graph routes to `ask`.
//!
//! With a model configured (`model_path`), the model's verdict is asked only after these checks
//! pass, and grounded then also requires the model to say so.

use std::sync::LazyLock;

use regex::Regex;
use tracing::Instrument;

use crate::detectors::{Fact, Finding, Kind, Role, Standing};
use crate::evidence::{Evidence, quote_occurs_in};

use super::report::{Cause, Report, UnsupportedClaim, Verdict};
use super::state::{IncidentState, IncidentUpdate};
use firstline_model::{Question, QuestionKind};

/// Most questions in a verdict (and in a round).
pub const MAX_QUESTIONS: usize = 3;

/// Language that presents a cause as established.
static CERTAIN: LazyLock<Regex> =
    regex!(r"(?i)\b(confirmed|root[ -]cause\s+(is|was|:)|definitely|certainly|proven)\b");

/// The judge node's body.
pub async fn judge(state: &IncidentState) -> IncidentUpdate {
    let span = tracing::info_span!(
        "incident.judge",
        grounded = tracing::field::Empty,
        unsupported = tracing::field::Empty
    );
    async {
        let verdict = match &state.report {
            Some(report) => judge_report(report, &state.evidence, &state.findings, state),
            None => Verdict {
                grounded: false,
                reason: "no report was written".to_string(),
                ..Verdict::default()
            },
        };
        let current = tracing::Span::current();
        current.record("grounded", verdict.grounded);
        current.record("unsupported", verdict.unsupported_claims.len());
        IncidentUpdate::default().verdict(Some(verdict))
    }
    .instrument(span)
    .await
}

/// Checks `report` against the round's evidence and findings.
pub fn judge_report(
    report: &Report,
    evidence: &[Evidence],
    findings: &[Finding],
    state: &IncidentState,
) -> Verdict {
    if report.heartbeat.is_some() {
        return Verdict {
            grounded: true,
            reason: "a heartbeat alert: it fires on purpose, nothing to verify".to_string(),
            ..Verdict::default()
        };
    }
    let mut unsupported = Vec::new();
    for claim in report.claims() {
        if let Err(reason) = check_claim(&claim.evidence, &claim.quote, evidence) {
            unsupported.push(UnsupportedClaim {
                statement: claim.statement.clone(),
                reason,
            });
        }
    }
    let mut verified = Vec::new();
    let all = (report.causes.iter().map(|c| (c, true)))
        .chain(
            report
                .causes
                .iter()
                .flat_map(|c| c.explains.iter().chain(&c.led_by))
                .map(|c| (c, false)),
        )
        .chain(report.observations.iter().map(|c| (c, false)));
    for (cause, is_cause) in all {
        let backed = detector_verified(cause, findings);
        let claims_certainty = presents_as_confirmed(cause);
        if claims_certainty && !backed {
            unsupported.push(UnsupportedClaim {
                statement: cause.statement.clone(),
                reason: "presented as confirmed, but no verified detector finding backs it"
                    .to_string(),
            });
        }
        if backed && is_cause && cause.confirmed {
            verified.push(cause);
        }
    }

    let recovered = report
        .recovered
        .as_ref()
        .is_some_and(|r| detector_verified(r, findings));
    let grounded = unsupported.is_empty() && (!verified.is_empty() || recovered);
    let reason = if grounded && verified.is_empty() {
        "the alert's own metric, re-run, is back: a verified recovery, nothing to act on"
            .to_string()
    } else if grounded {
        let detectors: Vec<String> = verified
            .iter()
            .filter_map(|c| c.detector.map(|d| d.to_string()))
            .collect();
        format!(
            "{} detector-verified cause(s) ({}); all {} claim(s) quote the evidence they cite",
            verified.len(),
            detectors.join(", "),
            report.claims().count()
        )
    } else if !unsupported.is_empty() {
        format!(
            "{} claim(s) not supported by the evidence they cite",
            unsupported.len()
        )
    } else if report.causes.is_empty() {
        "no cause found in the evidence".to_string()
    } else {
        "no suspected cause is verified by a detector".to_string()
    };
    let questions = if grounded {
        Vec::new()
    } else {
        doubts(report, state)
    };
    Verdict {
        grounded,
        unsupported_claims: unsupported,
        questions,
        reason,
    }
}

/// Whether `cause` is presented as established: flagged confirmed, or worded so.
pub fn presents_as_confirmed(cause: &Cause) -> bool {
    cause.confirmed
        || CERTAIN.is_match(&cause.statement)
        || cause.claims.iter().any(|c| CERTAIN.is_match(&c.statement))
}

/// Invariant 8 for one claim.
pub fn check_claim(
    ids: &[crate::evidence::EvidenceId],
    quote: &str,
    evidence: &[Evidence],
) -> Result<(), String> {
    if ids.is_empty() {
        return Err("cites no evidence".to_string());
    }
    if quote.trim().is_empty() {
        return Err("has no quote".to_string());
    }
    for id in ids {
        let Some(item) = evidence.iter().find(|e| e.id == *id) else {
            return Err(format!("cites {id}, which does not exist"));
        };
        if !quote_occurs_in(quote, &item.excerpt) {
            return Err(format!("its quote does not occur in {id}"));
        }
    }
    Ok(())
}

/// A cause is detector-verified when a verified finding of its detector cites evidence the
/// cause's claims also cite.
fn detector_verified(cause: &Cause, findings: &[Finding]) -> bool {
    let Some(detector) = cause.detector else {
        return false;
    };
    findings
        .iter()
        .filter(|f| f.kind() == detector && f.verified)
        .any(|f| {
            f.refs.iter().any(|r| {
                cause
                    .claims
                    .iter()
                    .any(|c| c.evidence.contains(&r.evidence))
            })
        })
}

/// The judge's doubts, as questions for the thread: whether what the alert saw has ended,
/// about each unconfirmed suspicion (from its payload), and with no suspicion about the
/// strongest symptom.
fn doubts(report: &Report, state: &IncidentState) -> Vec<Question> {
    let when = state.alert.around();
    let target = &state.alert.target;
    let mut questions = Vec::new();
    // What the alert saw has ended: ask whether it resolved before suspecting a change.
    let recovered = state
        .findings
        .iter()
        .find(|f| f.kind() == Kind::Recovered && f.standing == Standing::Current);
    if let Some(recovered) = recovered {
        questions.push(Question::free(format!(
            "{} — has the alert resolved, or is something still wrong that this does not show?",
            recovered.title()
        )));
    }
    // In rank order: the strongest lead is asked about first. A finding that no longer
    // stands plays no part (`Finding::role`).
    let suspects = state
        .findings
        .iter()
        .filter(|f| f.role() == Role::Cause && !f.verified);
    for suspect in suspects {
        let question = match &suspect.fact {
            Fact::Rollout(_) if recovered.is_some() => continue,
            Fact::Rollout(_) => Question::of(
                QuestionKind::Hypothesis,
                format!(
                    "{} — was that change meant to touch what `{}` measures? Comparing it with the \
                 previous revision would confirm or rule it out.",
                    suspect.title(),
                    target.alertname.as_deref().unwrap_or("the alert")
                ),
            ),
            Fact::ConfigError(c) => Question::free(match &c.problem {
                crate::detectors::ConfigProblem::MissingSetting {
                    name: Some(key), ..
                } => format!("Did anything change in {key}'s config {when}?"),
                _ => format!(
                    "Did anything change in the configuration of `{}` {when}?",
                    target.workload.as_deref().unwrap_or("the workload")
                ),
            }),
            Fact::Dependency(_) => Question::free(format!(
                "{} — is that dependency down or being changed {when}, or is this noise?",
                suspect.title()
            )),
            Fact::Certificate(_) => Question::of(
                QuestionKind::Hypothesis,
                format!("Was a certificate for this service renewed or rotated {when}?"),
            ),
            _ => Question::of(
                QuestionKind::Hypothesis,
                format!(
                    "The evidence suggests \"{}\" but does not prove it: does that match what \
                     you see?",
                    suspect.title()
                ),
            ),
        };
        questions.push(question);
    }
    if report.causes.is_empty()
        && let Some(symptom) = state
            .findings
            .iter()
            .find(|f| matches!(f.role(), Role::Symptom | Role::Consequence))
    {
        questions.push(Question::free(match symptom.kind() {
            Kind::CrashLoop | Kind::Exited => format!(
                "{} but no log line says why: did anything change in its image, config or \
                 dependencies {when}?",
                symptom.title()
            ),
            _ => format!(
                "{} with no cause in the evidence: did anything change {when} (a deploy, a \
                 config or feature-flag change, traffic, a dependency)?",
                symptom.title()
            ),
        }));
    }
    questions.truncate(MAX_QUESTIONS);
    questions
}
