//! `expire_action` and `show_action`: the reply that shows an action follows its state, and how
//! it ended is said once in the thread.
//!
//! Showing re-renders the whole reply (the round's report and the action as its row stands) with
//! `chat.update`, so repeating it is harmless. The outcome reply (executed and verified, or not
//! executed) is posted exactly once: marked on the row before posting, found again by its
//! metadata if a worker died between Slack's answer and storing its ts.

use sqlx::PgPool;

use firstline_investigation::RoundResult;
use firstline_slack::{OutgoingMessage, SlackApi};
use firstline_store::actions::{self as store, ActionRow};
use firstline_workflows::types::{ActionInput, ActionOutcome, PostOutcome};

use super::blocks::{ACTION_EVENT_TYPE, outcome_metadata, outcome_text};
use super::execute::outcome;
use crate::RoundError;
use crate::blocks::marks_round;
use crate::group::reply::{Posted, replace};
use crate::post::REPLIES_SCANNED;

/// Marks action `input.action_id` expired unless someone decided it first; the row as it stands.
pub async fn expire_action(
    pool: &PgPool,
    input: &ActionInput,
) -> Result<ActionOutcome, RoundError> {
    let row = store::expire(pool, input.action_id)
        .await?
        .ok_or(RoundError::UnknownAction(input.action_id))?;
    if row.state == firstline_model::ActionState::Expired {
        super::count("expired");
    }
    Ok(outcome(&row))
}

/// Shows action `input.action_id` as it stands in its reply, and posts its outcome once it ended.
pub async fn show_action(
    pool: &PgPool,
    slack: &SlackApi,
    input: &ActionInput,
) -> Result<PostOutcome, RoundError> {
    let (thread_id, round) = (input.thread_id, input.round);
    let action = store::get(pool, input.action_id)
        .await?
        .ok_or(RoundError::UnknownAction(input.action_id))?;
    let row: Option<(i64, serde_json::Value, Option<String>)> = sqlx::query_as(
        "SELECT id, result, posted_ts FROM rounds WHERE thread_id = $1 AND number = $2",
    )
    .bind(thread_id)
    .bind(round as i32)
    .fetch_optional(pool)
    .await?;
    let Some((round_id, result, posted_ts)) = row else {
        return Err(RoundError::NotCommitted { thread_id, round });
    };
    let Some(ts) = posted_ts else {
        return Err(RoundError::NotPosted { thread_id, round });
    };
    let result: RoundResult =
        serde_json::from_value(result).map_err(|error| RoundError::BadResult {
            thread_id,
            round,
            error,
        })?;
    replace(
        pool,
        slack,
        &Posted {
            channel: &input.thread.channel_id,
            thread_id,
            round_id,
            round,
            result: &result,
            ts: &ts,
        },
        false,
    )
    .await?;
    match post_outcome(pool, slack, input, &action).await? {
        Some(ts) => Ok(PostOutcome {
            ts,
            posted_now: true,
        }),
        None => Ok(PostOutcome {
            ts,
            posted_now: false,
        }),
    }
}

/// Posts the outcome reply unless it is posted (or the action has not ended); its ts when this
/// call posted it.
async fn post_outcome(
    pool: &PgPool,
    slack: &SlackApi,
    input: &ActionInput,
    action: &ActionRow,
) -> Result<Option<String>, RoundError> {
    let Some(text) = outcome_text(action) else {
        return Ok(None);
    };
    if action.outcome_ts.is_some() {
        return Ok(None);
    }
    if action.outcome_attempted {
        let replies = slack
            .thread_replies(
                &input.thread.channel_id,
                &input.thread.thread_ts,
                REPLIES_SCANNED,
            )
            .await?;
        if let Some(earlier) = replies.into_iter().find(|r| {
            marks_round(
                r.metadata.as_ref(),
                ACTION_EVENT_TYPE,
                input.thread_id,
                input.round,
            )
        }) {
            store::outcome_posted(pool, action.id, &earlier.ts).await?;
            return Ok(None);
        }
    }
    store::outcome_attempted(pool, action.id).await?;
    let ts = slack
        .post_message(&OutgoingMessage {
            channel: input.thread.channel_id.clone(),
            thread_ts: Some(input.thread.thread_ts.clone()),
            text: text.clone(),
            blocks: Some(
                serde_json::json!([{"type": "section", "text": {"type": "mrkdwn",
                    "text": firstline_model::text::clip(&text, 2900, "…")}}]),
            ),
            metadata: Some(outcome_metadata(input.thread_id, input.round, action.id)),
        })
        .await?;
    store::outcome_posted(pool, action.id, &ts).await?;
    tracing::info!(%ts, state = action.state.as_str(), "action outcome posted");
    Ok(Some(ts))
}
