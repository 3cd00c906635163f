//! `post_to_thread`: the round's reply in the alert's thread, exactly once (invariant 11).
//!
//! The posted ts is stored on the round; a retry that finds it does nothing more. The dangerous
//! window — Slack accepted the message, the worker died before storing its ts — is closed by
//! `rounds.post_attempted_at`, set *before* posting: a retry that finds it set and no ts reads
//! the thread and adopts its own earlier reply (recognised by the reply's metadata) instead of
//! posting again. Then the 👀 on the message that woke the round becomes ✅ (grounded) or ❓.

use firstline_bot::slack::{OutgoingMessage, SlackApi};
use sqlx::PgPool;

use super::RoundError;
use super::blocks::{
    FAILURE_EVENT_TYPE, is_round_reply, marks_round, round_blocks, round_metadata,
};
use super::faults;
use super::types::{FailureInput, PostInput, PostOutcome};
use crate::incident::RoundResult;

/// Reaction for a round that could not finish.
pub const FAILED: &str = "warning";

/// Reaction added on receipt of a mention (by the bot).
pub const EYES: &str = "eyes";
/// Reaction for a grounded reply.
pub const GROUNDED: &str = "white_check_mark";
/// Reaction for a reply that asks.
pub const ASKING: &str = "question";
/// Advisory lock class of "posting round N" (`FLPT`).
const POST_LOCK_CLASS: i32 = 0x464c_5054;
/// Thread messages read when looking for an earlier reply.
const REPLIES_SCANNED: u16 = 4_000;

/// Posts round `input.round` unless it is already posted.
pub async fn post_to_thread(
    pool: &PgPool,
    slack: &SlackApi,
    input: &PostInput,
) -> Result<PostOutcome, RoundError> {
    let (thread_id, round) = (input.thread_id, input.round);
    let row: Option<(i64, bool, serde_json::Value, Option<String>, bool)> = sqlx::query_as(
        "SELECT id, grounded, result, posted_ts, post_attempted_at IS NOT NULL
           FROM rounds WHERE thread_id = $1 AND number = $2",
    )
    .bind(thread_id)
    .bind(round as i32)
    .fetch_optional(pool)
    .await?;
    let Some((round_id, grounded, result, posted_ts, attempted)) = row else {
        return Err(RoundError::NotCommitted { thread_id, round });
    };
    // One attempt at a time: a slow attempt that outlived its timeout must not post while its
    // retry does. The lock is the connection's; it goes when the attempt (or its process) does.
    let mut lock = pool.acquire().await?;
    let key = (POST_LOCK_CLASS, (round_id % i64::from(i32::MAX)) as i32);
    let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
        .bind(key.0)
        .bind(key.1)
        .fetch_one(&mut *lock)
        .await?;
    if !locked {
        return Err(RoundError::PostInProgress { round });
    }
    let result = post_locked(
        pool, slack, input, round_id, grounded, result, posted_ts, attempted,
    )
    .await;
    let unlocked = sqlx::query("SELECT pg_advisory_unlock($1, $2)")
        .bind(key.0)
        .bind(key.1)
        .execute(&mut *lock)
        .await;
    if let Err(e) = unlocked {
        // Dropping the connection would keep the lock: close it instead.
        tracing::warn!(error = %e, "could not release the post lock; closing its connection");
        let _ = lock.close().await;
    }
    result
}

/// The post itself, under the round's post lock.
#[allow(clippy::too_many_arguments)]
async fn post_locked(
    pool: &PgPool,
    slack: &SlackApi,
    input: &PostInput,
    round_id: i64,
    grounded: bool,
    result: serde_json::Value,
    posted_ts: Option<String>,
    attempted: bool,
) -> Result<PostOutcome, RoundError> {
    let (thread_id, round) = (input.thread_id, input.round);
    let channel = &input.thread.channel_id;

    let (ts, posted_now) = match posted_ts {
        Some(ts) => (ts, false),
        None => {
            let earlier = if attempted {
                find_earlier_reply(slack, input).await?
            } else {
                None
            };
            match earlier {
                Some(ts) => {
                    tracing::info!(%ts, "adopting the reply an earlier attempt posted");
                    store_posted(pool, round_id, &ts).await?;
                    (ts, false)
                }
                None => {
                    sqlx::query("UPDATE rounds SET post_attempted_at = now() WHERE id = $1")
                        .bind(round_id)
                        .execute(pool)
                        .await?;
                    let result: RoundResult = serde_json::from_value(result).map_err(|error| {
                        RoundError::BadCheckpoint {
                            thread_id,
                            round,
                            error,
                        }
                    })?;
                    let message = OutgoingMessage {
                        channel: channel.clone(),
                        thread_ts: Some(input.thread.thread_ts.clone()),
                        text: result.text.clone(),
                        blocks: Some(round_blocks(&result, round).into()),
                        metadata: Some(round_metadata(thread_id, round, grounded)),
                    };
                    let ts = slack.post_message(&message).await?;
                    faults::pause(faults::POST_AFTER_SEND).await;
                    store_posted(pool, round_id, &ts).await?;
                    (ts, true)
                }
            }
        }
    };

    for target in &input.react_to {
        // Idempotent: a missing 👀 or an existing ✅ is fine.
        if let Err(e) = slack.remove_reaction(channel, target, EYES).await {
            tracing::warn!(error = %e, "could not remove 👀");
        }
        let reaction = if grounded { GROUNDED } else { ASKING };
        slack.add_reaction(channel, target, reaction).await?;
        sqlx::query("UPDATE rounds SET reacted_ts = $2 WHERE id = $1")
            .bind(round_id)
            .bind(target)
            .execute(pool)
            .await?;
    }
    Ok(PostOutcome { ts, posted_now })
}

async fn store_posted(pool: &PgPool, round_id: i64, ts: &str) -> Result<(), RoundError> {
    sqlx::query(
        "UPDATE rounds SET posted_ts = $2, posted_at = now() WHERE id = $1 AND posted_ts IS NULL",
    )
    .bind(round_id)
    .bind(ts)
    .execute(pool)
    .await?;
    Ok(())
}

/// The ts of this round's reply if an earlier attempt posted it.
async fn find_earlier_reply(
    slack: &SlackApi,
    input: &PostInput,
) -> Result<Option<String>, RoundError> {
    let replies = slack
        .thread_replies(
            &input.thread.channel_id,
            &input.thread.thread_ts,
            REPLIES_SCANNED,
        )
        .await?;
    Ok(replies
        .into_iter()
        .find(|r| is_round_reply(r.metadata.as_ref(), input.thread_id, input.round))
        .map(|r| r.ts))
}

/// Tells the thread that round `input.round` could not finish (invariant 10: the on-call
/// engineer always gets an answer), once: a retry finds its note by metadata. The people who
/// asked get ⚠️ instead of 👀.
pub async fn post_failure(
    slack: &SlackApi,
    input: &FailureInput,
) -> Result<PostOutcome, RoundError> {
    let channel = &input.thread.channel_id;
    let replies = slack
        .thread_replies(channel, &input.thread.thread_ts, REPLIES_SCANNED)
        .await?;
    let metadata = serde_json::json!({"event_type": FAILURE_EVENT_TYPE,
        "event_payload": {"thread_id": input.thread_id, "round": input.round}});
    let earlier = replies.into_iter().find(|r| {
        marks_round(
            r.metadata.as_ref(),
            FAILURE_EVENT_TYPE,
            input.thread_id,
            input.round,
        )
    });
    let (ts, posted_now) = match earlier {
        Some(reply) => (reply.ts, false),
        None => {
            let text = format!(
                ":warning: Firstline could not finish its analysis (round {}): {}. \
                 Mention me to try again; what was gathered so far is kept.",
                input.round,
                clip_reason(&input.reason)
            );
            let message = OutgoingMessage {
                channel: channel.clone(),
                thread_ts: Some(input.thread.thread_ts.clone()),
                text,
                blocks: None,
                metadata: Some(metadata),
            };
            (slack.post_message(&message).await?, true)
        }
    };
    for target in &input.react_to {
        if let Err(e) = slack.remove_reaction(channel, target, EYES).await {
            tracing::warn!(error = %e, "could not remove 👀");
        }
        slack.add_reaction(channel, target, FAILED).await?;
    }
    Ok(PostOutcome { ts, posted_now })
}

/// The first line of an error, at most 300 characters.
fn clip_reason(reason: &str) -> String {
    let line = reason.lines().next().unwrap_or_default();
    line.chars().take(300).collect()
}
