//! People's answers to a round's questions, read in their own words against what each question
//! asked for ([`QuestionKind`]): a name matched against the objects the round discovered
//! (exactly, then ignoring case, then a unique prefix, then a unique spelling within two edits —
//! the reading says which), yes or no with negation, and times ("since 14:05", "about 20
//! minutes ago") in the workspace's time zone. `key=value` labels are read too, whatever was
//! asked.
//!
//! The next round starts from what was read ([`apply`]): a namespace, workload, service or pod
//! becomes the alert's label, a time its start when it had none. An answer that a typed question
//! cannot read is kept as [`Reading::Unread`]: the `ask` node then clarifies once, with the
//! candidates, and never repeats a question.
//!
//! Everything here reads untrusted text and only ever selects among values or parses numbers:
//! nothing a person writes becomes a query or an instruction.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;
use regex::Regex;
use serde::{Deserialize, Serialize};

use firstline_alert::AlertTarget;
use firstline_model::{HumanAnswer, Question, QuestionKind};

/// Characters of an answer kept in the reading (quoted back in the report).
const SAID_CHARS: usize = 120;
/// Largest edit distance a misspelt name is matched at.
const MAX_EDITS: usize = 2;
/// Shortest word matched as a prefix of a name, or as a misspelling of one.
const MIN_PARTIAL: usize = 3;

/// One answer and what it was read as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadAnswer {
    /// The question it answers.
    pub question: Question,
    /// Slack user id of who answered.
    pub user: String,
    /// What they wrote, clipped (untrusted).
    pub said: String,
    pub reading: Reading,
}

/// What an answer says, as far as its question asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "read", rename_all = "snake_case")]
pub enum Reading {
    /// A name: one of the question's choices, or one stated plainly when it offered none.
    Name { name: String, matched: NameMatch },
    /// A time: since when.
    Since { at: DateTime<Utc> },
    /// Yes or no, and since when when the answer says.
    YesNo {
        yes: bool,
        since: Option<DateTime<Utc>>,
    },
    /// `key=value` labels.
    Labels { labels: BTreeMap<String, String> },
    /// Prose answering a free-text question: the conversation carries it.
    Prose,
    /// Nothing the question asks for; the candidates it could have named.
    Unread { candidates: Vec<String> },
}

/// How a name was matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NameMatch {
    Exact,
    IgnoringCase,
    /// The answer wrote the start of exactly one name.
    Prefix,
    /// The answer misspelt exactly one name, by this many edits.
    Spelling {
        edits: usize,
    },
    /// No choices were offered: the name as written.
    Stated,
}

impl NameMatch {
    /// How the report says it matched.
    pub fn describe(self) -> String {
        match self {
            NameMatch::Exact => "by name".to_string(),
            NameMatch::IgnoringCase => "by name, ignoring case".to_string(),
            NameMatch::Prefix => "as the one name starting with what was written".to_string(),
            NameMatch::Spelling { edits } => {
                format!("as the one name within {edits} letter(s) of what was written")
            }
            NameMatch::Stated => "as written (the round had no names to match)".to_string(),
        }
    }
}

impl ReadAnswer {
    /// Whether the answer could not be read against its question.
    pub fn unread(&self) -> bool {
        matches!(self.reading, Reading::Unread { .. })
    }
}

/// Reads `answers` (oldest first) against `questions`, the ones the last round asked. An answer
/// with `key=value` labels is read as them; otherwise against the first question that reads it
/// — strict readings (a choice, a time, yes or no) before a name stated where no choices were
/// offered. An answer nothing reads is unread against the first typed question no earlier
/// answer read (it gets clarified); when every typed question has its answer, it answers a
/// free-text question. With no question open, only labels are read. `zone`: the workspace's
/// time zone.
pub fn read(questions: &[Question], answers: &[HumanAnswer], zone: Tz) -> Vec<ReadAnswer> {
    // With no question open (every one was asked before), labels are still read.
    let unasked = Question::default();
    let first = questions.first().unwrap_or(&unasked);
    let mut out = Vec::new();
    for answer in answers {
        let text = strip_mentions(&answer.text);
        let at = slack_time(&answer.ts).unwrap_or_else(Utc::now);
        let labels = labels_in(&text);
        if questions.is_empty() && labels.is_empty() {
            continue;
        }
        // A click answers the question it was rendered for, and only that one.
        let clicked = answer.question.and_then(|i| questions.get(i as usize));
        let questions = clicked.map_or(questions, std::slice::from_ref);
        let first = clicked.unwrap_or(first);
        let read_with = |stated: bool| {
            questions.iter().find_map(|q| {
                let reading = read_one(q, &text, at, zone, stated);
                (!matches!(reading, Reading::Unread { .. } | Reading::Prose))
                    .then_some((q, reading))
            })
        };
        // A typed question no earlier answer has read still needs its answer: prose that reads
        // as none is unread against it (and clarified), before it is taken as free text.
        let still_open = questions.iter().find(|q| {
            q.kind != QuestionKind::FreeText
                && !out
                    .iter()
                    .any(|r: &ReadAnswer| r.question == **q && !r.unread())
        });
        let (question, reading) = if !labels.is_empty() {
            (first, Reading::Labels { labels })
        } else if let Some(found) = read_with(false).or_else(|| read_with(true)) {
            found
        } else if let Some(open) = still_open {
            (
                open,
                Reading::Unread {
                    candidates: open.choices.clone(),
                },
            )
        } else if let Some(free) = questions.iter().find(|q| q.kind == QuestionKind::FreeText) {
            (free, Reading::Prose)
        } else {
            (
                first,
                Reading::Unread {
                    candidates: first.choices.clone(),
                },
            )
        };
        out.push(ReadAnswer {
            question: question.clone(),
            user: answer.user.clone(),
            said: firstline_model::text::clip(text.trim(), SAID_CHARS, "…"),
            reading,
        });
    }
    out
}

/// `answer` read against `question`, written at `at`; `stated`: a name with no choices to
/// match may be taken as written.
fn read_one(
    question: &Question,
    answer: &str,
    at: DateTime<Utc>,
    zone: Tz,
    stated: bool,
) -> Reading {
    let unread = || Reading::Unread {
        candidates: question.choices.clone(),
    };
    match question.kind {
        QuestionKind::Namespace | QuestionKind::Workload
            if stated || !question.choices.is_empty() =>
        {
            match name_in(answer, &question.choices, question.kind) {
                Some((name, matched)) => Reading::Name { name, matched },
                None => unread(),
            }
        }
        QuestionKind::Namespace | QuestionKind::Workload => unread(),
        QuestionKind::Since => {
            time_in(answer, at, zone).map_or_else(unread, |at| Reading::Since { at })
        }
        QuestionKind::Hypothesis => match yes_or_no(answer) {
            Some(yes) => Reading::YesNo {
                yes,
                since: time_in(answer, at, zone),
            },
            None => unread(),
        },
        QuestionKind::FreeText => Reading::Prose,
    }
}

/// `key=value` (or `key="value"`) pairs written in an answer.
fn labels_in(answer: &str) -> BTreeMap<String, String> {
    static LABEL: LazyLock<Regex> =
        regex!(r#"(?:^|[\s,{])([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"?([A-Za-z0-9][A-Za-z0-9._/-]*)"?"#);
    LABEL
        .captures_iter(answer)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect()
}

/// The alert's target with what the answers named: a namespace, a workload, service or pod (as
/// labels the alert did not have), and a start time when it had none.
pub fn apply(target: AlertTarget, answers: &[ReadAnswer]) -> AlertTarget {
    let mut labels: Vec<(String, String)> = Vec::new();
    let mut since = None;
    for answer in answers {
        match &answer.reading {
            Reading::Name { name, .. } => {
                let key = match answer.question.kind {
                    QuestionKind::Namespace => "namespace",
                    // A name with a pod's generated suffix names a pod; anything else is
                    // looked up as a Service, then a workload of that name.
                    _ if firstline_alert::workload::deployment_from_pod_name(name).is_some() => {
                        "pod"
                    }
                    _ => "service",
                };
                labels.push((key.to_string(), name.clone()));
            }
            Reading::Labels { labels: given } => {
                labels.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            Reading::Since { at }
            | Reading::YesNo {
                since: Some(at), ..
            } => {
                since = since.or(Some(*at));
            }
            Reading::YesNo { since: None, .. } | Reading::Prose | Reading::Unread { .. } => {}
        }
    }
    let mut target = target.with_labels(labels);
    if target.starts_at.is_none() {
        target.starts_at = since;
    }
    target
}

/// Slack user mentions (`<@U123>`) removed: the bot's own name is not an answer.
fn strip_mentions(text: &str) -> String {
    static MENTION: LazyLock<Regex> = regex!(r"<@[A-Z0-9]+(?:\|[^>]*)?>");
    MENTION.replace_all(text, " ").into_owned()
}

fn slack_time(ts: &str) -> Option<DateTime<Utc>> {
    let seconds: f64 = ts.parse().ok()?;
    Utc.timestamp_millis_opt((seconds * 1000.0) as i64).single()
}

/// Words people write around a name that are never the name.
const FILLER: &[&str] = &[
    "a",
    "about",
    "ago",
    "an",
    "and",
    "around",
    "as",
    "at",
    "but",
    "check",
    "deployment",
    "env",
    "environment",
    "for",
    "hours",
    "i",
    "in",
    "is",
    "it",
    "it's",
    "its",
    "it’s",
    "just",
    "look",
    "minutes",
    "namespace",
    "no",
    "nope",
    "ns",
    "of",
    "on",
    "one",
    "pod",
    "please",
    "pretty",
    "service",
    "should",
    "since",
    "so",
    "started",
    "sure",
    "that",
    "the",
    "think",
    "this",
    "thx",
    "to",
    "today",
    "we",
    "workload",
    "yeah",
    "yep",
    "yes",
];

/// The words of an answer that could be names: Kubernetes-name characters, lowercased.
fn words(answer: &str) -> Vec<String> {
    answer
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '\'' | '’')))
        .map(|w| w.trim_matches(|c: char| matches!(c, '.' | '\'' | '’' | '/' | '-')))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether a written word matches a name, at one stage of strictness.
type WordMatches = fn(&str, &str) -> bool;

/// The name `answer` gives, matched against `choices` in order of strictness; with no choices,
/// the one word that can be a name. `None` when nothing matches or two names match equally.
fn name_in(answer: &str, choices: &[String], kind: QuestionKind) -> Option<(String, NameMatch)> {
    let written = words(answer);
    if choices.is_empty() {
        let names: Vec<&String> = written
            .iter()
            .filter(|w| !FILLER.contains(&w.to_lowercase().as_str()) && is_name(w, kind))
            .collect();
        return match names.as_slice() {
            [one] => Some(((*one).clone(), NameMatch::Stated)),
            _ => None,
        };
    }
    let unique = |matched: Vec<&String>| -> Option<String> {
        let mut distinct: Vec<&String> = Vec::new();
        for m in matched {
            if !distinct.contains(&m) {
                distinct.push(m);
            }
        }
        match distinct.as_slice() {
            [one] => Some((*one).clone()),
            _ => None,
        }
    };
    let stages: [(NameMatch, WordMatches); 3] = [
        (NameMatch::Exact, |w, c| w == c),
        (NameMatch::IgnoringCase, |w, c| w.eq_ignore_ascii_case(c)),
        (NameMatch::Prefix, |w, c| {
            w.len() >= MIN_PARTIAL && c.to_lowercase().starts_with(&w.to_lowercase())
        }),
    ];
    for (how, matches) in stages {
        let matched: Vec<&String> = choices
            .iter()
            .filter(|c| written.iter().any(|w| matches(w, c)))
            .collect();
        if !matched.is_empty() {
            // Two names matching alike is ambiguous: stricter stages had their chance.
            return unique(matched).map(|name| (name, how));
        }
    }
    let mut best: Option<(usize, Vec<&String>)> = None;
    for choice in choices {
        let lower = choice.to_lowercase();
        let edits = written
            .iter()
            .filter(|w| w.chars().count() > MIN_PARTIAL && !FILLER.contains(&w.as_str()))
            .map(|w| edit_distance(&w.to_lowercase(), &lower))
            .min();
        match (edits, &mut best) {
            (Some(e), _) if e > MAX_EDITS => {}
            (Some(e), Some((b, names))) if e == *b => names.push(choice),
            (Some(e), Some((b, _))) if e > *b => {}
            (Some(e), _) => best = Some((e, vec![choice])),
            (None, _) => {}
        }
    }
    let (edits, names) = best?;
    unique(names).map(|name| (name, NameMatch::Spelling { edits }))
}

/// Whether `word` can be a Kubernetes object's name (a namespace has no dots or slashes).
fn is_name(word: &str, kind: QuestionKind) -> bool {
    let allowed = |c: char| {
        c.is_ascii_lowercase()
            || c.is_ascii_digit()
            || c == '-'
            || (kind != QuestionKind::Namespace && c == '.')
    };
    word.len() >= 2
        && word.len() <= 63
        && word.chars().all(allowed)
        && word
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && !word.chars().all(|c| c.is_ascii_digit())
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// Yes or no, negation included ("not the deploy", "I don't think so").
fn yes_or_no(answer: &str) -> Option<bool> {
    let lower = answer.to_lowercase().replace('’', "'");
    let written = words(&lower);
    let first = written.first().map(String::as_str);
    const YES: &[&str] = &[
        "yes",
        "yep",
        "yeah",
        "yup",
        "correct",
        "right",
        "confirmed",
        "true",
        "exactly",
        "indeed",
        "y",
    ];
    const NO: &[&str] = &["no", "nope", "nah", "wrong", "false", "incorrect", "n"];
    const NEGATIONS: &[&str] = &[
        "not",
        "isn't",
        "wasn't",
        "don't",
        "doesn't",
        "didn't",
        "never",
        "nothing",
        "ruled",
        "unrelated",
        "can't",
        "cannot",
    ];
    match first {
        Some(w) if NO.contains(&w) => return Some(false),
        Some(w) if YES.contains(&w) => {
            // "yes, but not …" still affirms what was asked.
            return Some(true);
        }
        _ => {}
    }
    if written.iter().any(|w| NEGATIONS.contains(&w.as_str())) {
        return Some(false);
    }
    if written
        .iter()
        .any(|w| YES.contains(&w.as_str()) && w.len() > 1)
        || lower.contains("that's it")
        || lower.contains("looks like it")
    {
        return Some(true);
    }
    None
}

/// A time an answer written at `at` gives: a clock time (`14:05`, `2pm`, `2:30 pm`) on the
/// latest day it is not in the future, in `zone`; or a duration ago (`20 minutes ago`, `2h
/// ago`).
fn time_in(answer: &str, at: DateTime<Utc>, zone: Tz) -> Option<DateTime<Utc>> {
    static AGO: LazyLock<Regex> =
        regex!(r"(?i)\b(\d{1,3})\s*(minutes?|mins?|m|hours?|hrs?|h)\s+ago\b");
    static CLOCK: LazyLock<Regex> = regex!(r"(?i)\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b");
    if let Some(c) = AGO.captures(answer) {
        let amount: i64 = c[1].parse().ok()?;
        let minutes = if c[2].to_lowercase().starts_with('h') {
            amount * 60
        } else {
            amount
        };
        return Some(at - Duration::minutes(minutes));
    }
    for c in CLOCK.captures_iter(answer) {
        let meridiem = c.get(3).map(|m| m.as_str().to_lowercase());
        // A bare number is a count, not a time: it needs minutes or am/pm.
        if c.get(2).is_none() && meridiem.is_none() {
            continue;
        }
        let mut hour: u32 = c[1].parse().ok()?;
        let minute: u32 = c.get(2).map_or(Some(0), |m| m.as_str().parse().ok())?;
        match meridiem.as_deref() {
            Some("pm") if hour < 12 => hour += 12,
            Some("am") if hour == 12 => hour = 0,
            _ => {}
        }
        let time = NaiveTime::from_hms_opt(hour, minute, 0)?;
        let local_day = at.with_timezone(&zone).date_naive();
        for day in [local_day, local_day.pred_opt()?] {
            let candidate = zone
                .from_local_datetime(&day.and_time(time))
                .earliest()?
                .with_timezone(&Utc);
            if candidate <= at {
                return Some(candidate);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
