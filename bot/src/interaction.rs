//! Slack interactions: a click on one of a question's choices (a button, a select, Yes/No) or
//! text typed into its "something else" box, on a reply's feedback buttons ("Helpful",
//! "Wrong cause"), or on a proposed action's Approve / Reject — `block_actions`, from the HTTP
//! interactivity endpoint or a Socket Mode `interactive` envelope, both verified like events
//! before they reach this module.
//!
//! Feedback is bound the same way to the round whose reply it was clicked on, and stored once
//! per person per round (`round_feedback`), not as a message.
//!
//! Approve / Reject ([`DecisionClick`]) is bound to the action in its `block_id`
//! ([`ActionBlock`]) and to the exact change shown, by the hash in the button's value; whether
//! it decides anything is [`crate::approval`]'s to say.
//!
//! A click is bound to what it was rendered for: its `block_id` names the round and question
//! ([`AnswerBlock`]), the message it came from must be that round's posted reply and the round
//! the thread's latest, and a clicked value must be one the question offered
//! (`Pipeline::handle_interaction` checks against `rounds`). It is then recorded exactly like a
//! message, of kind `answer`, with the action's `action_ts` as its ts: a click delivered twice
//! is stored once, and it wakes the round only while the thread awaits an answer.

use firstline_model::{ActionBlock, AnswerBlock, Decision, FeedbackBlock, ThreadKey, Verdict};
use serde_json::Value;

use crate::message::{Incoming, Kind};

/// A click or typed answer, read from a `block_actions` payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Click {
    pub thread: ThreadKey,
    /// The message the block is in: the round's reply.
    pub message_ts: String,
    pub block: AnswerBlock,
    pub user: String,
    /// The value clicked, or the text typed.
    pub value: String,
    /// When Slack says the action happened: the recorded message's ts.
    pub action_ts: String,
}

/// What an interaction is.
#[derive(Debug, Clone, PartialEq)]
pub enum Interaction {
    Answer(Click),
    Feedback(FeedbackClick),
    /// The "Wrong cause" dialog, submitted: the right cause as the person wrote it.
    RightCause(RightCause),
    /// Approve or Reject on a proposed action.
    Decision(DecisionClick),
}

/// A click on a proposed action's Approve or Reject button.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionClick {
    pub thread: ThreadKey,
    /// The message the buttons are in: the round's reply that shows the action.
    pub message_ts: String,
    /// `actions.id`, from the block's id.
    pub action_id: i64,
    pub decision: Decision,
    /// The hash of the change the button was rendered for (sha256, lowercase hex).
    pub hash: String,
    pub user: String,
    /// When Slack says the click happened.
    pub action_ts: Option<String>,
    pub trigger_id: Option<String>,
    pub response_url: Option<String>,
}

/// The "Wrong cause" dialog's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RightCause {
    /// The round it is about (`rounds.id`, carried in the dialog's `private_metadata`).
    pub round_id: i64,
    pub user: String,
    /// What they wrote; empty when they wrote nothing.
    pub text: String,
}

/// The dialog's `callback_id`, and its one input's block and action.
const RIGHT_CAUSE_VIEW: &str = "firstline.wrong_cause";
const RIGHT_CAUSE_BLOCK: &str = "right_cause";
const RIGHT_CAUSE_ACTION: &str = "text";

/// The dialog a "Wrong cause" click opens for round `round_id`: the right cause, optional.
pub fn right_cause_view(round_id: i64) -> Value {
    serde_json::json!({
        "type": "modal",
        "callback_id": RIGHT_CAUSE_VIEW,
        "private_metadata": round_id.to_string(),
        "title": {"type": "plain_text", "text": "Wrong cause"},
        "submit": {"type": "plain_text", "text": "Save"},
        "close": {"type": "plain_text", "text": "Skip"},
        "blocks": [{
            "type": "input", "block_id": RIGHT_CAUSE_BLOCK, "optional": true,
            "label": {"type": "plain_text", "text": "What was the right cause?"},
            "element": {"type": "plain_text_input", "action_id": RIGHT_CAUSE_ACTION,
                        "multiline": true, "max_length": 1000}
        }]
    })
}

/// A click on a reply's feedback buttons.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedbackClick {
    pub thread: ThreadKey,
    /// The reply it was clicked on.
    pub message_ts: String,
    pub round: u32,
    pub user: String,
    pub verdict: Verdict,
    /// Opens the "Wrong cause" dialog (valid for 3 s).
    pub trigger_id: Option<String>,
}

/// Why an interaction is acknowledged but not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAnAnswer {
    #[error("interaction type `{0}`")]
    Type(String),
    #[error("an interaction without {0}")]
    Incomplete(&'static str),
    #[error(
        "an action on a block that is not a question's, a reply's feedback or a proposed action's (`{0}`)"
    )]
    OtherBlock(String),
    #[error("`{0}` is not a verdict")]
    NoVerdict(String),
    #[error("`{0}` is not a decision (`approve:` or `reject:` and the change's sha256)")]
    NoDecision(String),
}

/// Whether `hash` looks like a change's hash: sha256 in lowercase hex.
fn is_change_hash(hash: &str) -> bool {
    hash.len() == 64
        && hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The click a `block_actions` payload carries.
pub fn read(payload: &Value) -> Result<Interaction, NotAnAnswer> {
    let text = |pointer: &'static str| {
        payload
            .pointer(pointer)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or(NotAnAnswer::Incomplete(pointer))
    };
    let kind = payload.get("type").and_then(Value::as_str).unwrap_or("");
    if kind == "view_submission"
        && payload.pointer("/view/callback_id").and_then(Value::as_str) == Some(RIGHT_CAUSE_VIEW)
    {
        let round_id = text("/view/private_metadata")?
            .parse()
            .map_err(|_| NotAnAnswer::Incomplete("/view/private_metadata"))?;
        let written = payload
            .pointer(&format!(
                "/view/state/values/{RIGHT_CAUSE_BLOCK}/{RIGHT_CAUSE_ACTION}/value"
            ))
            .and_then(Value::as_str)
            .unwrap_or("");
        return Ok(Interaction::RightCause(RightCause {
            round_id,
            user: text("/user/id")?,
            text: firstline_model::text::prefix(written.trim(), 1000).to_string(),
        }));
    }
    if kind != "block_actions" {
        return Err(NotAnAnswer::Type(kind.to_string()));
    }
    let action = payload
        .pointer("/actions/0")
        .ok_or(NotAnAnswer::Incomplete("/actions/0"))?;
    let block_id = action
        .get("block_id")
        .and_then(Value::as_str)
        .ok_or(NotAnAnswer::Incomplete("/actions/0/block_id"))?;
    let value = action
        .get("value")
        .or_else(|| action.pointer("/selected_option/value"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or(NotAnAnswer::Incomplete("/actions/0/value"))?
        .to_string();
    let message_ts = text("/message/ts").or_else(|_| text("/container/message_ts"))?;
    // The round's reply is in the alert's thread; a reply to a top-level alert has its ts.
    let thread_ts = text("/message/thread_ts").unwrap_or_else(|_| message_ts.clone());
    let thread = ThreadKey {
        team_id: text("/team/id")?,
        channel_id: text("/channel/id").or_else(|_| text("/container/channel_id"))?,
        thread_ts,
    };
    let user = text("/user/id")?;
    if let Some(feedback) = FeedbackBlock::parse(block_id) {
        return Ok(Interaction::Feedback(FeedbackClick {
            thread,
            message_ts,
            round: feedback.round,
            user,
            verdict: Verdict::parse(&value).ok_or(NotAnAnswer::NoVerdict(value))?,
            trigger_id: text("/trigger_id").ok(),
        }));
    }
    if let Some(block) = ActionBlock::parse(block_id) {
        let (decision, hash) = ActionBlock::parse_value(&value)
            .filter(|(_, hash)| is_change_hash(hash))
            .ok_or_else(|| {
                NotAnAnswer::NoDecision(firstline_model::text::prefix(&value, 80).to_string())
            })?;
        return Ok(Interaction::Decision(DecisionClick {
            thread,
            message_ts,
            action_id: block.action_id,
            decision,
            hash: hash.to_string(),
            user,
            action_ts: text("/actions/0/action_ts").ok(),
            trigger_id: text("/trigger_id").ok(),
            response_url: text("/response_url").ok(),
        }));
    }
    let block = AnswerBlock::parse(block_id)
        .ok_or_else(|| NotAnAnswer::OtherBlock(block_id.to_string()))?;
    Ok(Interaction::Answer(Click {
        thread,
        message_ts,
        block,
        user,
        value,
        action_ts: action
            .get("action_ts")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(NotAnAnswer::Incomplete("/actions/0/action_ts"))?
            .to_string(),
    }))
}

impl Click {
    /// The click as a message to record: kind `answer`, in the question's thread, at the
    /// action's ts, saying what was clicked or typed.
    pub fn incoming(&self, payload: &Value) -> Incoming {
        Incoming {
            event_id: None,
            thread: self.thread.clone(),
            ts: self.action_ts.clone(),
            thread_ts: Some(self.thread.thread_ts.clone()),
            kind: Kind::Answer,
            user_id: Some(self.user.clone()),
            bot_id: None,
            app_id: None,
            username: None,
            text: self.value.clone(),
            raw: payload.clone(),
            traceparent: None,
        }
    }

    /// The reply's blocks with this question's inputs replaced by who answered what; `None` when
    /// the payload carries no blocks to change.
    pub fn answered_blocks(&self, payload: &Value) -> Option<Value> {
        let blocks = payload.pointer("/message/blocks")?.as_array()?;
        let ids = [
            AnswerBlock {
                typed: false,
                ..self.block
            }
            .block_id(),
            AnswerBlock {
                typed: true,
                ..self.block
            }
            .block_id(),
        ];
        let mut out: Vec<Value> = Vec::with_capacity(blocks.len());
        let mut shown = false;
        for block in blocks {
            let answered = block
                .get("block_id")
                .and_then(Value::as_str)
                .is_some_and(|id| ids.iter().any(|i| i == id));
            if !answered {
                out.push(block.clone());
            } else if !shown {
                shown = true;
                let said = firstline_model::text::clip(&self.value, 200, "…")
                    .replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;");
                out.push(serde_json::json!({"type": "context", "elements": [{"type": "mrkdwn",
                    "text": format!("✅ <@{}> answered question {}: *{said}*", self.user, self.block.index + 1)}]}));
            }
        }
        shown.then_some(Value::Array(out))
    }
}

#[cfg(test)]
mod tests;
