//! An alert's title line: the status tag or word integrations open with, and how the alert is
//! named after it.
//!
//! - Alertmanager: `[FIRING:1] KubePodCrashLooping (…)`, `[RESOLVED] …` — the first word after
//!   the tag is the `alertname` label.
//! - Grafana's legacy alerts: `[Alerting] High CPU`, `[OK] High CPU`; `[RECOVERED]`,
//!   `[TRIGGERED]` — the rest of the title is the rule's human name.
//! - PagerDuty, Datadog, Opsgenie: `Triggered: [P1] High CPU on web-1`, `Recovered: …`,
//!   `Resolved: #1234 …`, and severity prefixes (`Warning: disk full`, no status) — the rest,
//!   without `[…]` tags, is the rule's name. A title that merely starts with the word `Resolved`
//!   or `Recovered` marks recovery without naming the alert. Dead man's switches open the same
//!   way with `MISSED:`.
//!
//! A rule's human name identifies the alert for matching a recovery with its firing alert; it is
//! not an `alertname` label. Leading markup (`*`, `_`, `>`), `:emoji:` codes and symbols (✅ 🔥)
//! are skipped first.

use crate::AlertStatus;

/// What the title line says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Title {
    pub status: Option<AlertStatus>,
    /// The `alertname`, from an Alertmanager title.
    pub alertname: Option<String>,
    /// The rule's human name, from other integrations' titles.
    pub rule: Option<String>,
}

/// Reads the first non-empty line of `text`.
pub fn read(text: &str) -> Title {
    let title = undecorated(first_line(text));
    if let Some(rest) = title.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return Title::default();
        };
        let tag = rest[..end].split(':').next().unwrap_or_default().trim();
        let after = &rest[end + 1..];
        let Some(status) = tag_status(tag) else {
            return Title::default();
        };
        let alertmanager =
            tag.eq_ignore_ascii_case("firing") || tag.eq_ignore_ascii_case("resolved");
        return match alertmanager {
            true => Title {
                status: Some(status),
                alertname: first_word(after),
                rule: None,
            },
            false => Title {
                status: Some(status),
                alertname: None,
                rule: without_tags(after),
            },
        };
    }
    let word: String = title.chars().take_while(|c| c.is_alphabetic()).collect();
    let status = word_status(&word);
    if status.is_none() && !is_severity(&word) {
        return Title::default();
    }
    let after = title[word.len()..].trim_start();
    match after.strip_prefix(':') {
        Some(rest) => Title {
            status,
            alertname: None,
            rule: without_tags(rest),
        },
        // `Resolved KubePodCrashLooping`: a recovery, its name not reliably placed.
        None if status == Some(AlertStatus::Resolved) => Title {
            status,
            ..Title::default()
        },
        None => Title::default(),
    }
}

/// The first non-empty line, trimmed.
pub fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
}

fn tag_status(tag: &str) -> Option<AlertStatus> {
    match tag.to_ascii_uppercase().as_str() {
        "FIRING" | "ALERTING" | "TRIGGERED" => Some(AlertStatus::Firing),
        "RESOLVED" | "OK" | "RECOVERED" => Some(AlertStatus::Resolved),
        _ => None,
    }
}

fn word_status(word: &str) -> Option<AlertStatus> {
    match word.to_ascii_lowercase().as_str() {
        "triggered" | "retriggered" | "firing" => Some(AlertStatus::Firing),
        // Dead man's switches (Cronitor, jobwatch-style webhooks): `MISSED: nightly-export`.
        "missed" => Some(AlertStatus::Firing),
        "resolved" | "recovered" => Some(AlertStatus::Resolved),
        _ => None,
    }
}

/// A severity word some integrations open the title with (`Warning: disk full`).
fn is_severity(word: &str) -> bool {
    ["alert", "warning", "critical"]
        .iter()
        .any(|s| word.eq_ignore_ascii_case(s))
}

/// The first word of `rest`, markup and punctuation around it removed.
fn first_word(rest: &str) -> Option<String> {
    let word = rest
        .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_' | '~' | '`'))
        .split_whitespace()
        .next()?
        .trim_matches(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')));
    (!word.is_empty()).then(|| word.to_string())
}

/// `rest` without leading `[P1]`-style tags, trimmed.
fn without_tags(rest: &str) -> Option<String> {
    let mut rest = rest.trim_start();
    while rest.starts_with('[') {
        match rest.find(']') {
            Some(end) => rest = rest[end + 1..].trim_start(),
            None => break,
        }
    }
    let name = rest.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// `line` without leading markup (`*`, `_`, `~`, `>`, `` ` ``), `:emoji:` codes and symbols.
fn undecorated(line: &str) -> &str {
    let mut s = line;
    loop {
        let trimmed = s.trim_start_matches(|c: char| {
            c.is_whitespace() || matches!(c, '*' | '_' | '~' | '>' | '`') || is_symbol(c)
        });
        let without_emoji = trimmed
            .strip_prefix(':')
            .and_then(|r| {
                let end = r.find(':')?;
                let code = &r[..end];
                (!code.is_empty()
                    && code.len() <= 40
                    && code
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+')))
                .then(|| &r[end + 1..])
            })
            .unwrap_or(trimmed);
        if without_emoji.len() == s.len() {
            return s;
        }
        s = without_emoji;
    }
}

fn is_symbol(c: char) -> bool {
    !c.is_ascii() && !c.is_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(text: &str) -> Option<AlertStatus> {
        read(text).status
    }

    #[test]
    fn a_tag_or_word_sets_the_status_and_anything_else_none() {
        assert_eq!(status("[Alerting] High CPU"), Some(AlertStatus::Firing));
        assert_eq!(
            status("Resolved KubePodCrashLooping"),
            Some(AlertStatus::Resolved)
        );
        for text in [
            "[P1] High CPU",
            "ResolvedConnectionsHigh is firing",
            "",
            "hello",
        ] {
            assert_eq!(status(text), None, "{text}");
        }
    }

    #[test]
    fn the_name_follows_the_tag_or_the_word() {
        let name = |text: &str| read(text).alertname;
        assert_eq!(
            name("*[RESOLVED]* KubePodCrashLooping checkout (shop)").as_deref(),
            Some("KubePodCrashLooping")
        );
        assert_eq!(name("Recovered: [P1] High CPU on web-1"), None);
        assert_eq!(name("[Alerting] High CPU alert"), None);
        assert_eq!(name("Resolved KubePodCrashLooping"), None);
        assert_eq!(name("checkout is slow, anyone?"), None);
        let rule = |text: &str| read(text).rule;
        assert_eq!(
            rule("Recovered: [P1] High CPU on web-1").as_deref(),
            Some("High CPU on web-1")
        );
        assert_eq!(
            rule("[OK] High CPU alert").as_deref(),
            Some("High CPU alert")
        );
        let severity = read("Warning: disk full on db-1");
        assert_eq!(
            (severity.status, severity.rule.as_deref()),
            (None, Some("disk full on db-1"))
        );
        let missed = read("MISSED: nightly-billing-export did not complete");
        assert_eq!(
            (missed.status, missed.rule.as_deref()),
            (
                Some(AlertStatus::Firing),
                Some("nightly-billing-export did not complete")
            )
        );
    }
}
