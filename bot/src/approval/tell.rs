//! What people are told about a click on Approve or Reject: the line the buttons become once it
//! decided the action (everyone sees it; the worker re-renders the whole reply later as the
//! action runs), and, to the person alone, why a click decided nothing. Slack mrkdwn; ids as
//! mentions (`<@U…>`, `<!subteam^S…>`), times as Slack dates in the reader's time zone.

use super::{Refusal, Standing};
use crate::interaction::DecisionClick;
use chrono::{DateTime, Utc};
use firstline_model::{ActionBlock, ActionState};
use serde_json::{Value, json};

/// The line in place of the buttons of an action just decided (`row`).
pub fn decided_line(row: &Standing) -> String {
    let by = row.decided_by.as_deref().map(mention).unwrap_or_default();
    match row.state {
        ActionState::Rejected => format!("✖️ Rejected by {by} — nothing will be changed"),
        _ => format!("✅ Approved by {by} — running …"),
    }
}

/// The notification text of the reply's edit.
pub fn decided_text(row: &Standing) -> String {
    match row.state {
        ActionState::Rejected => "A proposed action was rejected".to_string(),
        _ => "A proposed action was approved".to_string(),
    }
}

/// The reply's blocks (`/message/blocks` of the click's payload) with action `action_id`'s
/// buttons replaced by `line`; `None` when the payload carries no such block.
pub fn decided_blocks(payload: &Value, action_id: i64, line: &str) -> Option<Value> {
    let blocks = payload.pointer("/message/blocks")?.as_array()?;
    let id = ActionBlock { action_id }.block_id();
    let mut shown = false;
    let out: Vec<Value> = blocks
        .iter()
        .map(|block| {
            if block.get("block_id").and_then(Value::as_str) == Some(id.as_str()) {
                shown = true;
                json!({"type": "context", "block_id": id,
                       "elements": [{"type": "mrkdwn", "text": line}]})
            } else {
                block.clone()
            }
        })
        .collect();
    shown.then_some(Value::Array(out))
}

/// Why `click` decided nothing, for the person who clicked.
pub fn refusal(refusal: &Refusal, click: &DecisionClick) -> String {
    let nothing = "Nothing was recorded.";
    match refusal {
        Refusal::Disabled => format!(
            "Acting on the cluster is turned off here (`actions.enabled` is false). {nothing}"
        ),
        Refusal::Unknown => format!("I do not know this action. {nothing}"),
        Refusal::NotShownHere => {
            format!("This button is not on the message that shows this action. {nothing}")
        }
        Refusal::OtherChange => format!(
            "This button is for a change other than the one proposed (the message may be out of date). {nothing}"
        ),
        Refusal::AlreadyDecided(row) => already_decided(row, &click.user),
        Refusal::Expired(row) => format!(
            "This proposal expired at {}, before anyone decided. {nothing}",
            when(row.expires_at)
        ),
        Refusal::NotAllowed {
            namespace,
            approvers,
        } => not_allowed(namespace.as_deref(), approvers),
        Refusal::GroupUnchecked { group, reason } => format!(
            "Your approval was not recorded: I could not check whether you are in {} ({}). Try again in a minute.",
            mention(group),
            firstline_model::text::prefix(reason, 200)
        ),
    }
}

fn already_decided(row: &Standing, clicker: &str) -> String {
    let did = match row.state {
        ActionState::Rejected => "rejected",
        _ => "approved",
    };
    let at = row.decided_at.map(when).unwrap_or_else(|| "earlier".into());
    let after = match row.state {
        ActionState::Executed => " It has run since.",
        ActionState::Failed => " It was tried since, and failed.",
        _ => "",
    };
    match row.decided_by.as_deref() {
        Some(by) if by == clicker => format!("You already {did} this action at {at}.{after}"),
        Some(by) => format!(
            "This action was already {did} by {} at {at}.{after} Your click changed nothing.",
            mention(by)
        ),
        None => format!("This action was already decided.{after} Your click changed nothing."),
    }
}

fn not_allowed(namespace: Option<&str>, approvers: &[String]) -> String {
    let scope = match namespace {
        Some(namespace) => format!("in namespace `{namespace}`"),
        None => "on a node (only approvers listed under `*`)".to_string(),
    };
    if approvers.is_empty() {
        return format!(
            "Nobody may approve actions {scope}: `actions.approvers` lists no one for it. Anyone may reject."
        );
    }
    let who: Vec<String> = approvers.iter().map(|id| mention(id)).collect();
    format!(
        "You may not approve this action. Who may approve actions {scope}: {}. Anyone may reject.",
        who.join(", ")
    )
}

/// A user (`U…`, `W…`) or user group (`S…`) as a Slack mention.
fn mention(id: &str) -> String {
    if id.starts_with('S') {
        format!("<!subteam^{id}>")
    } else {
        format!("<@{id}>")
    }
}

/// A time as a Slack date (shown in the reader's zone), UTC in the fallback.
fn when(at: DateTime<Utc>) -> String {
    format!(
        "<!date^{}^{{date_short_pretty}} {{time}}|{}>",
        at.timestamp(),
        at.format("%Y-%m-%d %H:%M UTC")
    )
}
