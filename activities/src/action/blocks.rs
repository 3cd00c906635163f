//! An action as Block Kit, inside the round's reply: what it does and why, the fields it
//! changes, how it is undone, and while it waits, Approve and Reject (bound to the action and its
//! change's hash); once decided, who decided and what happened instead of the buttons.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use firstline_model::{ActionBlock, ActionState, Decision};
use firstline_slack::limits::sections;
use firstline_store::actions::ActionRow;

use super::change::Change;
use super::verify::Verification;
use crate::blocks::above_feedback;

/// Fields listed in the reply (a change never has more: `change.rs` refuses larger ones).
const SHOWN_FIELDS: usize = 40;
/// `metadata.event_type` of an action's outcome reply.
pub const ACTION_EVENT_TYPE: &str = "firstline_action";

/// `blocks` (a round's reply) with `action`'s blocks before the feedback buttons.
pub fn with_action(blocks: Vec<Value>, action: &ActionRow) -> Vec<Value> {
    above_feedback(blocks, action_blocks(action))
}

/// The action's blocks as its state stands.
pub fn action_blocks(action: &ActionRow) -> Vec<Value> {
    let change: Option<Change> = serde_json::from_value(action.change.clone()).ok();
    let mut blocks = vec![json!({"type": "divider"})];
    let mut head = format!("*Proposed action:* {}", action.action.title());
    if let Some(change) = &change
        && !change.why.is_empty()
    {
        head.push_str(&format!("\n_Because_ {}", change.why));
    }
    for chunk in sections(&head) {
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": chunk}}));
    }
    if let Some(change) = &change {
        let mut lines: Vec<String> = change
            .fields
            .iter()
            .take(SHOWN_FIELDS)
            .map(|f| format!("{}: {} → {}", f.field, f.before, f.after))
            .collect();
        if change.fields.len() > SHOWN_FIELDS {
            lines.push(format!(
                "… and {} more fields",
                change.fields.len() - SHOWN_FIELDS
            ));
        }
        let version = change
            .resource_version
            .as_deref()
            .map(|v| format!(" at resourceVersion {v}"))
            .unwrap_or_default();
        let diff = format!(
            "What changes in {}{version}:\n```{}```",
            change.object,
            lines.join("\n").replace("```", "'''")
        );
        for chunk in sections(&diff) {
            blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": chunk}}));
        }
    }
    let undo = action.action.undo();
    match action.state {
        ActionState::Proposed => {
            blocks.push(context(&format!(
                "{undo}. Only listed approvers can approve; anyone can reject. Expires {}.",
                clock(action.expires_at)
            )));
            blocks.push(json!({
                "type": "actions",
                "block_id": ActionBlock { action_id: action.id }.block_id(),
                "elements": [
                    {"type": "button", "action_id": "approve", "style": "primary",
                     "text": {"type": "plain_text", "text": "Approve"},
                     "value": ActionBlock::value(Decision::Approve, &action.change_hash),
                     "confirm": {
                        "title": {"type": "plain_text", "text": "Run this action?"},
                        "text": {"type": "mrkdwn", "text": firstline_model::text::clip(&action.action.title(), 280, "…")},
                        "confirm": {"type": "plain_text", "text": "Approve"},
                        "deny": {"type": "plain_text", "text": "Cancel"}}},
                    {"type": "button", "action_id": "reject", "style": "danger",
                     "text": {"type": "plain_text", "text": "Reject"},
                     "value": ActionBlock::value(Decision::Reject, &action.change_hash)}
                ]
            }));
        }
        state => blocks.push(context(&status(action, state))),
    }
    blocks
}

/// One line saying where the action stands.
pub fn status(action: &ActionRow, state: ActionState) -> String {
    let by = action
        .decided_by
        .as_deref()
        .map(|u| format!("<@{u}>"))
        .unwrap_or_else(|| "nobody".into());
    let when = action.decided_at.map(clock).unwrap_or_default();
    let result = action.result.as_deref().unwrap_or("");
    match state {
        ActionState::Proposed => "Waiting for a decision".into(),
        ActionState::Approved => format!("✅ Approved by {by} at {when} — running"),
        ActionState::Rejected => format!("✖️ Rejected by {by} at {when}; nothing was changed"),
        ActionState::Expired => {
            "⌛ Expired: nobody decided before it timed out or a newer round began; nothing was changed"
                .to_string()
        }
        ActionState::Failed => format!("❌ Approved by {by} at {when}, not executed: {result}"),
        ActionState::Executed => {
            let verified = action
                .verification
                .as_ref()
                .and_then(Verification::from_value)
                .map(|v| {
                    if v.recovered {
                        format!("\n✅ Recovered: {}", v.summary)
                    } else {
                        format!("\n⚠️ Not recovered: {}", v.summary)
                    }
                })
                .unwrap_or_else(|| "\nVerifying…".into());
            format!(
                "⚙️ Executed at {} (approved by {by} at {when}): {result}{verified}",
                action.executed_at.map(clock).unwrap_or_default()
            )
        }
    }
}

/// The outcome reply's text, once the action ended (`None` while it has not).
pub fn outcome_text(action: &ActionRow) -> Option<String> {
    let title = action.action.title();
    match action.state {
        ActionState::Executed => {
            let verification = action
                .verification
                .as_ref()
                .and_then(Verification::from_value)?;
            Some(if verification.recovered {
                format!("✅ *Recovered* after: {title}.\n{}", verification.summary)
            } else {
                format!(
                    "⚠️ *Not recovered* after: {title}.\n{}\n{}.",
                    verification.summary,
                    action.action.undo()
                )
            })
        }
        ActionState::Failed => Some(format!(
            "❌ *Not executed*: {title}.\n{}",
            action.result.as_deref().unwrap_or("")
        )),
        _ => None,
    }
}

/// The outcome reply's metadata: which thread and round's action it tells.
pub fn outcome_metadata(thread_id: i64, round: u32, action_id: i64) -> Value {
    json!({"event_type": ACTION_EVENT_TYPE,
           "event_payload": {"thread_id": thread_id, "round": round, "action_id": action_id}})
}

fn context(text: &str) -> Value {
    json!({"type": "context", "elements": [{"type": "mrkdwn",
        "text": firstline_model::text::clip(text, 2900, "…")}]})
}

fn clock(at: DateTime<Utc>) -> String {
    at.format("%H:%M UTC").to_string()
}
