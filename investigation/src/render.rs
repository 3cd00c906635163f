//! The round's outcome as posted text (Slack mrkdwn-flavoured Markdown; Block Kit comes with
//! the bot) and as JSON.
//!
//! The first line states the likely cause and its confidence (or that none is confirmed yet);
//! the alert follows on the second.
//! Grounded: headline, cause(s) with confidence and detector, the evidence quotes with their
//! ids (`E3: "…"`), what else was seen, what is missing, next steps, similar incidents.
//! Not grounded: headline, the questions (with the choices to reply with), then what was seen and
//! what is missing. Either way, what the round took from people's answers follows the headline.
//!
//! Evidence text is untrusted: only short quotes (≤ 200 characters) are shown, never whole
//! excerpts, and every piece of text that came from outside is escaped for Slack (`&`, `<`,
//! `>`), so a log line cannot ping `<!channel>` or forge a link.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use firstline_model::{Question, QuestionKind};

use crate::answers::{ReadAnswer, Reading};
use crate::detectors::Finding;
use crate::detectors::text;
use crate::evidence::Evidence;
use crate::missing::{Missing, MissingKind};
use crate::model_run::ModelRun;
use crate::prior::memory;
use crate::report::{Cause, Claim, Report, Verdict};
use crate::state::{IncidentState, Usage};

/// Most prior incidents and observations shown.
const MAX_LISTED: usize = 3;
/// Most choices listed under a question.
const MAX_CHOICES_SHOWN: usize = 8;
/// Most quotes shown under one cause (all of its claims are judged).
const MAX_QUOTES_PER_CAUSE: usize = 3;

/// Everything a round produced, as stored (`rounds.result`) and printed by `--json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundResult {
    pub grounded: bool,
    /// The text that would be posted.
    pub text: String,
    pub report: Option<Report>,
    pub verdict: Option<Verdict>,
    pub questions: Vec<Question>,
    pub findings: Vec<Finding>,
    pub evidence: Vec<Evidence>,
    pub missing: Vec<Missing>,
    pub usage: Usage,
    /// What the model path did (absent without a model).
    #[serde(default)]
    pub model: Option<ModelRun>,
}

impl RoundResult {
    /// The result of a finished round.
    pub fn from_state(state: &IncidentState) -> Self {
        Self {
            grounded: state.grounded(),
            text: render_markdown(state),
            report: state.report.clone(),
            verdict: state.verdict.clone(),
            questions: state.questions.clone(),
            findings: state.findings.clone(),
            evidence: state.evidence.clone(),
            missing: state.missing.clone(),
            usage: state.usage,
            model: state.model.clone(),
        }
    }
}

/// The text posted to the thread for a finished round.
pub fn render_markdown(state: &IncidentState) -> String {
    let Some(report) = &state.report else {
        return "*Firstline could not write a report for this alert.*\n".to_string();
    };
    let mut out = String::new();
    if let Some(heartbeat) = &report.heartbeat {
        let _ = writeln!(
            out,
            "*Heartbeat, nothing to investigate: {}*",
            escape(&report.headline)
        );
        let _ = writeln!(out, "\n*Heartbeat*: {}", escape(heartbeat));
        return out;
    }
    // A mention's question is answered first; then what is most likely wrong and how sure; the
    // alert follows.
    if let Some(answer) = crate::hypothesis::answer(state) {
        let _ = writeln!(out, "*{}*", escape(&answer));
    }
    let _ = writeln!(out, "*{}*", escape(&lead(state, report)));
    let _ = writeln!(out, "{}", escape(&report.headline));
    write_answers(&mut out, &state.answers);
    if state.grounded() {
        let mut shown = Vec::new();
        if let Some(recovered) = &report.recovered {
            let _ = writeln!(out, "\n*Recovered*: {}", escape(&recovered.detail));
            for claim in recovered.claims.iter().take(MAX_QUOTES_PER_CAUSE) {
                let _ = writeln!(out, "{}", quote_line(claim));
                shown.push(claim);
            }
        }
        for cause in &report.causes {
            out.push('\n');
            write_cause(&mut out, cause, &mut shown);
        }
        write_observations(&mut out, "Also seen", &report.observations);
    } else {
        if !state.questions.is_empty() {
            out.push_str("\n*Questions*\n");
            for (i, question) in state.questions.iter().enumerate() {
                let _ = writeln!(out, "{}. {}", i + 1, escape(&question.text));
                if !question.clarifies && !question.choices.is_empty() {
                    let listed = question
                        .choices
                        .iter()
                        .take(MAX_CHOICES_SHOWN)
                        .map(|c| format!("`{}`", escape(c)))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let more = question.choices.len().saturating_sub(MAX_CHOICES_SHOWN);
                    let more = if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    };
                    let _ = writeln!(out, "   _Reply with one of:_ {listed}{more}");
                }
            }
        }
        let seen: Vec<Cause> = report
            .causes
            .iter()
            .chain(&report.observations)
            .cloned()
            .collect();
        write_observations(&mut out, "Seen, not confirmed", &seen);
    }
    write_missing(&mut out, &report.missing);
    if !report.next_steps.is_empty() {
        out.push_str("\n*Next steps*\n");
        for (i, step) in report.next_steps.iter().enumerate() {
            let _ = writeln!(out, "{}. {}", i + 1, escape(step));
        }
    }
    if !report.similar.is_empty() {
        out.push_str("\n*Seen before*\n");
        for prior in report.similar.iter().take(MAX_LISTED) {
            let title = match &prior.incident.permalink {
                Some(link) if is_plain_url(link) => {
                    format!("<{link}|{}>", escape(&prior.incident.title))
                }
                _ => escape(&prior.incident.title),
            };
            let similarity = prior
                .similarity
                .map(|s| format!(", similarity {s:.2}"))
                .unwrap_or_default();
            // A storm is one incident: say how many alerts it linked.
            let alerts = match prior.incident.alert_count {
                n if n > 1 => format!("{n} alerts, "),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "• {title} ({alerts}matched on {}{similarity}): {} Fix: {}",
                prior.matched_on.join(", "),
                escape(&text::quote_line(&prior.incident.root_cause)),
                escape(&text::quote_line(&prior.incident.resolution)),
            );
        }
    }
    if let Some(model) = &state.model {
        let _ = writeln!(out, "\n_{}_", escape(&model.note()));
    }
    out
}

/// The summary's first line: the headline cause and its confidence, or that none is confirmed
/// yet and the strongest lead (a suspicion, else what the round saw).
fn lead(state: &IncidentState, report: &Report) -> String {
    if let Some(recovered) = report.recovered.as_ref().filter(|_| state.grounded()) {
        return format!("Recovered, nothing to act on now: {}", recovered.statement);
    }
    match report.causes.first() {
        Some(cause) if state.grounded() => format!(
            "Likely cause ({} confidence): {}",
            cause.confidence.as_str(),
            cause.statement
        ),
        Some(cause) => format!(
            "No cause confirmed yet; strongest lead ({} confidence, unverified): {}",
            cause.confidence.as_str(),
            cause.statement
        ),
        None => match &report.lead {
            Some(lead) => {
                format!("No cause confirmed yet; strongest lead (not a cause by itself): {lead}")
            }
            None => "No cause confirmed yet".to_string(),
        },
    }
}

/// Writes a cause with its quotes, skipping quotes an earlier cause already showed.
fn write_cause<'a>(out: &mut String, cause: &'a Cause, shown: &mut Vec<&'a Claim>) {
    let label = if cause.confirmed {
        "Cause"
    } else {
        "Suspected cause"
    };
    let how = if cause.confirmed {
        "confirmed by"
    } else {
        "suggested by"
    };
    let detector = cause
        .detector
        .map_or("no detector".to_string(), |d| format!("the `{d}` detector"));
    let _ = writeln!(
        out,
        "*{label}* ({} confidence, {how} {detector}): {}",
        cause.confidence.as_str(),
        escape(&cause.statement)
    );
    let _ = writeln!(out, "{}", escape(&cause.detail));
    let fresh: Vec<&Claim> = cause
        .claims
        .iter()
        .filter(|claim| {
            !shown
                .iter()
                .any(|s| s.evidence == claim.evidence && s.quote == claim.quote)
        })
        .take(MAX_QUOTES_PER_CAUSE)
        .collect();
    for claim in fresh {
        let _ = writeln!(out, "{}", quote_line(claim));
        shown.push(claim);
    }
    for (label, linked) in [("Explains", &cause.explains), ("Led there", &cause.led_by)] {
        for item in linked.iter().take(MAX_LISTED) {
            let _ = writeln!(out, "• _{label}_: {}", escape(&item.statement));
            let fresh = item.claims.iter().find(|claim| {
                !shown
                    .iter()
                    .any(|s| s.evidence == claim.evidence && s.quote == claim.quote)
            });
            if let Some(claim) = fresh {
                let _ = writeln!(out, "  {}", quote_line(claim));
                shown.push(claim);
            }
        }
    }
}

/// What the round took from people's answers, and how each was read.
fn write_answers(out: &mut String, answers: &[ReadAnswer]) {
    let lines: Vec<String> = answers
        .iter()
        .filter_map(|answer| {
            let what = match &answer.reading {
                Reading::Name { name, matched } => {
                    let field = match answer.question.kind {
                        QuestionKind::Namespace => "namespace",
                        _ => "subject",
                    };
                    format!(
                        "{field} `{}` (matched {})",
                        escape(name),
                        matched.describe()
                    )
                }
                Reading::Since { at } => format!("since {}", at.format("%H:%M UTC")),
                Reading::YesNo { yes, since } => {
                    let since = since
                        .map(|at| format!(", since {}", at.format("%H:%M UTC")))
                        .unwrap_or_default();
                    format!(
                        "{} to \"{}\"{since}",
                        if *yes { "yes" } else { "no" },
                        escape(&answer.question.text)
                    )
                }
                Reading::Labels { labels } => labels
                    .iter()
                    .map(|(k, v)| format!("`{}={}`", escape(k), escape(v)))
                    .collect::<Vec<_>>()
                    .join(", "),
                Reading::Prose | Reading::Unread { .. } => return None,
            };
            Some(format!(
                "• {what} — <@{}>: \"{}\"",
                answer.user,
                escape(&answer.said)
            ))
        })
        .collect();
    if !lines.is_empty() {
        out.push_str("\n*From the thread*\n");
        for line in lines {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// `> E3: "…"`.
fn quote_line(claim: &Claim) -> String {
    let ids: Vec<String> = claim.evidence.iter().map(ToString::to_string).collect();
    format!("> {}: \"{}\"", ids.join(", "), escape(&claim.quote))
}

fn write_observations(out: &mut String, title: &str, causes: &[Cause]) {
    if causes.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n*{title}*");
    for cause in causes.iter().take(MAX_LISTED) {
        let detector = cause
            .detector
            .map_or(String::new(), |d| format!(", `{d}` detector"));
        let _ = writeln!(
            out,
            "• {} ({} confidence{detector})",
            escape(&cause.statement),
            cause.confidence.as_str()
        );
        if let Some(claim) = cause.claims.first() {
            let _ = writeln!(out, "  {}", quote_line(claim));
        }
    }
}

fn write_missing(out: &mut String, missing: &[Missing]) {
    if missing.is_empty() {
        return;
    }
    out.push_str("\n*Not checked*\n");
    for item in missing {
        if item.capability == memory() {
            let _ = writeln!(out, "• Past incidents: {}", escape(&item.reason));
            continue;
        }
        let how = match item.kind {
            MissingKind::Failed => "could not be read",
            MissingKind::Skipped => "skipped",
        };
        let _ = writeln!(
            out,
            "• {} {how}: {}",
            capitalise(item.capability.label()),
            escape(&item.reason)
        );
    }
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Slack's three control characters, escaped; newlines flattened so a value stays one line.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn is_plain_url(link: &str) -> bool {
    (link.starts_with("https://") || link.starts_with("http://"))
        && !link.contains(['<', '>', '|', ' ', '\n'])
}
