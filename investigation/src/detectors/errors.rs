//! The strongest evidence when nothing else explains it: fatal and error lines the applications
//! logged (container logs, Loki) and Warning events the cluster recorded. None of these is a
//! verified cause on its own (application text is untrusted, a warning may be noise): the
//! report lists them verbatim when no detector confirmed a cause, so it never says "nothing
//! wrong" while its evidence holds an error, and the strongest is the lead a question names.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`ErrorLine`] | symptom | never |
//! | [`WarningEvent`] | symptom | never (routine reasons are context, `standing.rs`) |

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::text::{
    LogLevel, event_blocks, event_field, event_time, is_application_log, is_tool_error_line,
    log_level, log_lines, looks_like_injection, message_of, normalise, object_name, quote_line,
};
use super::{
    Confidence, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom, cite,
};
use crate::evidence::{Capability, Evidence};

/// Error lines kept per evidence item.
const LINES_PER_LOG: usize = 2;
/// Warning events kept per evidence item.
const WARNINGS_PER_LIST: usize = 3;

static STRONG_ERROR: LazyLock<Regex> = regex!(
    r"(?i)^\s*(panic:|fatal error:|Exception in thread)|\b(Traceback \(most recent call last\)|\w+(?:Exception|Error)\b:)"
);
static WARNING_EVENT: LazyLock<Regex> = regex!(r"\bWarning\b");
/// Event reasons that are routine during any rollout or restart, not evidence of a fault.
const ROUTINE_REASONS: &[&str] = &["BackOff", "Unhealthy", "Killing", "Pulling", "Pulled"];

/// How severe an error line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A warning the process keeps repeating (what it is stuck on, when it logs no error).
    RepeatedWarning,
    Error,
    Fatal,
}

/// An error line an application logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorLine {
    /// Where it was logged: `` `pod`'s log ``, `the log store`.
    pub source: String,
    pub pod: Option<String>,
    pub severity: Severity,
    /// The line, quoted.
    pub line: String,
}

impl Payload for ErrorLine {
    const SPEC: KindSpec = KindSpec {
        name: "error-line",
        role: Role::Symptom,
        verified_when: "never: an application's own words are a lead, not proof",
        accounts_for: &[],
    };

    fn example() -> Self {
        Self {
            source: "`api-7d9f8c6b5-x2k4q`'s log".into(),
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            severity: Severity::Error,
            line: "2025-03-04T14:01:30Z ERROR ledger rejected batch 42: checksum mismatch".into(),
        }
    }

    fn title(&self) -> String {
        format!(
            "{} in {}: `{}`",
            match self.severity {
                Severity::Fatal => "Fatal error",
                Severity::Error => "Error",
                Severity::RepeatedWarning => "Repeated warning",
            },
            self.source,
            message_of(&self.line)
        )
    }

    fn detail(&self) -> String {
        format!(
            "{} logged an error around the alert: it may explain the alert, or be noise.",
            self.source
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        normalise(&self.line) == normalise(&other.line)
    }

    fn step(&self, _scene: &Scene) -> String {
        format!("Check whether this explains the alert: \"{}\".", self.line)
    }
}

/// A Warning event the cluster recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarningEvent {
    pub reason: String,
    /// The object it is about.
    pub object: Option<String>,
    pub message: Option<String>,
    /// The line quoted (its message, else its reason).
    pub line: String,
}

impl Payload for WarningEvent {
    const SPEC: KindSpec = KindSpec {
        name: "warning-event",
        role: Role::Symptom,
        verified_when: "never: a warning is a lead, and many are routine",
        accounts_for: &[Symptom::Any],
    };

    fn example() -> Self {
        Self {
            reason: "FailedBinding".into(),
            object: Some("data-0".into()),
            message: Some("waiting for first consumer".into()),
            line: "Message: 'waiting for first consumer'".into(),
        }
    }

    fn title(&self) -> String {
        format!(
            "Warning event `{}`{}",
            self.reason,
            self.object
                .as_deref()
                .map(|o| format!(" on `{o}`"))
                .unwrap_or_default()
        )
    }

    fn detail(&self) -> String {
        match &self.message {
            Some(m) => format!("Kubernetes recorded a `{}` warning: {m}", self.reason),
            None => format!("Kubernetes recorded a `{}` warning.", self.reason),
        }
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.object.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.reason == other.reason && self.object == other.object
    }

    fn step(&self, _scene: &Scene) -> String {
        format!("Check whether this explains the alert: \"{}\".", self.line)
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for item in round.evidence {
        if is_application_log(item) {
            out.extend(error_lines(item, round.ctx.default_resource.as_deref()));
        } else if item.capability == Capability::Events {
            out.extend(warning_events(item));
        }
    }
    out
}

/// The most severe error lines of a log: fatal before error, the last occurrences first.
fn error_lines(evidence: &Evidence, default_resource: Option<&str>) -> Vec<Finding> {
    let lines = log_lines(evidence);
    let mut candidates: Vec<(Severity, &str)> = lines
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty() && !is_tool_error_line(l) && !looks_like_injection(l))
        .filter_map(|l| {
            let severity = match log_level(l) {
                Some(LogLevel::Fatal) => Severity::Fatal,
                Some(LogLevel::Error) => Severity::Error,
                None if STRONG_ERROR.is_match(l) => Severity::Error,
                _ => return None,
            };
            Some((severity, l))
        })
        .collect();
    if candidates.is_empty() {
        // No error at all: a warning the process keeps repeating (waiting on a lock, retrying
        // a dependency) is what it is stuck on.
        candidates = repeated_warning(&lines)
            .map(|line| vec![(Severity::RepeatedWarning, line)])
            .unwrap_or_default();
    }
    // Most severe first; among equals the latest (a process's last words come last).
    candidates.reverse();
    candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
    let pod = object_name(evidence).or_else(|| default_resource.map(str::to_string));
    let source = match evidence.capability {
        Capability::LogQuery => "the log store".to_string(),
        _ => pod
            .as_deref()
            .map_or("a container log".to_string(), |p| format!("`{p}`'s log")),
    };
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (severity, line) in candidates {
        let quote = quote_line(line);
        let key = normalise(&quote);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        out.push(
            Finding::new(
                ErrorLine {
                    source: source.clone(),
                    pod: pod.clone(),
                    severity,
                    line: quote.clone(),
                },
                if severity == Severity::Fatal {
                    Confidence::Medium
                } else {
                    Confidence::Low
                },
                false,
            )
            .citing(vec![cite(evidence, quote)]),
        );
        if out.len() == LINES_PER_LOG {
            break;
        }
    }
    out
}

/// The last of the warning lines that repeat most (at least three times, ignoring numbers and
/// times).
fn repeated_warning<'a>(lines: &[&'a str]) -> Option<&'a str> {
    let warnings: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| log_level(l) == Some(LogLevel::Warn) && !looks_like_injection(l))
        .collect();
    let mut best: Option<(usize, &str)> = None;
    for line in &warnings {
        let key = normalise(line);
        let count = warnings.iter().filter(|l| normalise(l) == key).count();
        if count >= 3 && best.is_none_or(|(n, _)| count >= n) {
            best = Some((count, line));
        }
    }
    best.map(|(_, line)| line)
}

/// Warning events, by reason, skipping the routine ones.
fn warning_events(evidence: &Evidence) -> Vec<Finding> {
    let lines: Vec<&str> = evidence.excerpt.lines().collect();
    let mut out: Vec<Finding> = Vec::new();
    for block in event_blocks(&lines) {
        let block_text = block.join("\n");
        let is_warning = block.iter().any(|l| {
            l.trim_start()
                .trim_start_matches("- ")
                .starts_with("Type: Warning")
                || l.trim_start().starts_with("type: Warning")
        }) || (block.len() == 1 && WARNING_EVENT.is_match(block[0]));
        if !is_warning || looks_like_injection(&block_text) {
            continue;
        }
        let reason = event_field(&block, "reason");
        let message = event_field(&block, "message");
        let object = event_field(&block, "name").map(|(v, _)| v.to_string());
        let Some((reason, reason_line)) = reason else {
            continue;
        };
        let seen = out
            .iter()
            .any(|f| matches!(&f.fact, super::Fact::WarningEvent(w) if w.reason == reason));
        if ROUTINE_REASONS.contains(&reason) || seen {
            continue;
        }
        let quote_source = message.map_or(reason_line, |(_, line)| line);
        let at = lines
            .iter()
            .position(|l| std::ptr::eq(*l, reason_line))
            .and_then(|i| event_time(&lines, i, evidence.fetched_at));
        out.push(
            Finding::new(
                WarningEvent {
                    reason: reason.to_string(),
                    object,
                    message: message.map(|(m, _)| m.to_string()),
                    line: quote_line(quote_source),
                },
                Confidence::Low,
                false,
            )
            .dated(at)
            .citing(vec![cite(evidence, quote_line(quote_source))]),
        );
        if out.len() == WARNINGS_PER_LIST {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests;
