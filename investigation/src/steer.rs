//! What a person's mention asks of the next round: objects to look at ("check payments-db",
//! "show logs of checkout", "what changed in orders-api") and a hypothesis to test ("is it the
//! deploy?", "is it payments-db?"). The round starts from the first object named
//! (`investigate/mod.rs`), and the reply's first line answers the hypothesis from the round's
//! typed findings (`hypothesis.rs`): confirmed, ruled out with the evidence, or not decidable and
//! why.
//!
//! Parsing selects names and one of a few hypotheses from untrusted text; nothing a person writes
//! becomes a query. The objects are names the round then looks up in the cluster: a name the
//! cluster does not know is reported as not found, not guessed.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use firstline_model::MentionSignal;

/// Characters of the mention kept (quoted back in the reply).
const SAID_CHARS: usize = 160;

/// What a mention asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Steering {
    /// Slack user id.
    pub user: String,
    /// What they wrote, without mentions, clipped (untrusted).
    pub said: String,
    /// Objects to start from, in the order written.
    pub objects: Vec<String>,
    /// A hypothesis to test, when the mention asks one.
    pub hypothesis: Option<Hypothesis>,
}

/// A hypothesis a mention asks the round to test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "is_it", content = "name", rename_all = "snake_case")]
pub enum Hypothesis {
    /// A deploy (rollout, release, new version) caused it.
    Deploy,
    /// The named object caused it.
    Object(String),
}

/// Words that follow a verb of looking but are never an object's name.
const NOT_NAMES: &[&str] = &[
    "a",
    "again",
    "all",
    "an",
    "any",
    "anything",
    "deploy",
    "deployment",
    "deploys",
    "did",
    "does",
    "everything",
    "for",
    "in",
    "is",
    "it",
    "its",
    "it's",
    "logs",
    "now",
    "of",
    "on",
    "out",
    "please",
    "release",
    "rollout",
    "that",
    "the",
    "there",
    "this",
    "to",
    "what",
    "why",
];

/// What the newest mention that asks something asks; `None` when none does. `bot_user`'s own
/// mention is removed from the text first.
pub fn read(mentions: &[MentionSignal]) -> Option<Steering> {
    mentions.iter().rev().find_map(read_one)
}

fn read_one(mention: &MentionSignal) -> Option<Steering> {
    static MENTION: LazyLock<Regex> = regex!(r"<@[A-Z0-9]+(?:\|[^>]*)?>");
    let text = MENTION.replace_all(&mention.text, " ");
    let text = text.trim();
    let objects = objects_in(text);
    let hypothesis = hypothesis_in(text, &objects);
    if objects.is_empty() && hypothesis.is_none() {
        return None;
    }
    Some(Steering {
        user: mention.user.clone(),
        said: firstline_model::text::clip(text, SAID_CHARS, "…"),
        objects,
        hypothesis,
    })
}

/// Names written after a verb of looking, or in backticks.
fn objects_in(text: &str) -> Vec<String> {
    static AFTER_VERB: LazyLock<Regex> = regex!(
        r"(?i)\b(?:check|look at|look into|investigate|inspect|dig into|what about|logs? (?:of|for|from)|show (?:me )?(?:the )?logs? (?:of|for|from)?|what changed in|changes? (?:in|to)|is it|was it|could it be)\s+(?:the\s+|at\s+)?`?([A-Za-z0-9][A-Za-z0-9._/-]*[A-Za-z0-9])`?"
    );
    static QUOTED: LazyLock<Regex> = regex!(r"`([A-Za-z0-9][A-Za-z0-9._/-]*[A-Za-z0-9])`");
    let mut out: Vec<String> = Vec::new();
    let mut found: Vec<(usize, String)> = AFTER_VERB
        .captures_iter(text)
        .chain(QUOTED.captures_iter(text))
        .filter_map(|c| c.get(1))
        .map(|m| (m.start(), m.as_str().to_string()))
        .collect();
    found.sort_by_key(|(at, _)| *at);
    for (_, name) in found {
        // `namespace/name` names the object in that namespace; the round keeps the name.
        let name = name.rsplit('/').next().unwrap_or(&name).to_string();
        if NOT_NAMES.contains(&name.to_lowercase().as_str())
            || !name.chars().any(|c| c.is_ascii_alphabetic())
            || out.contains(&name)
        {
            continue;
        }
        out.push(name);
    }
    out
}

/// "is it the deploy?" (and the rollout, the release, the new version); "is it X?" for a named X.
fn hypothesis_in(text: &str, objects: &[String]) -> Option<Hypothesis> {
    static DEPLOY: LazyLock<Regex> = regex!(
        r"(?i)\b(?:is|was|could|did|caused by)\b.{0,40}\b(?:deploy|deployment|rollout|roll-out|release|new version|upgrade|the change)\b"
    );
    static IS_IT: LazyLock<Regex> = regex!(r"(?i)\b(?:is|was|could) it(?: be)?\b");
    if DEPLOY.is_match(text) {
        return Some(Hypothesis::Deploy);
    }
    if IS_IT.is_match(text) && text.contains('?') {
        return objects.first().cloned().map(Hypothesis::Object);
    }
    None
}

#[cfg(test)]
mod tests;
