//! `post_to_thread`: the round's reply in the alert's thread, exactly once (invariant 11).
//!
//! The posted ts is stored on the round; a retry that finds it does nothing more. The dangerous
//! window — Slack accepted the message, the worker died before storing its ts — is closed by
//! `rounds.post_attempted_at`, set *before* posting: a retry that finds it set and no ts reads
//! the thread and adopts its own earlier reply (recognised by the reply's metadata) instead of
//! posting again. Then the 👀 on the message that woke the round becomes ✅ (grounded) or ❓ —
//! best effort: a reaction Slack refuses never fails the round.

use firstline_slack::{OutgoingMessage, SlackApi};
use sqlx::PgPool;

use crate::RoundError;
use crate::blocks::{FAILURE_EVENT_TYPE, is_round_reply, marks_round, round_metadata};
use crate::group::reply::{Posted, refresh, replace, reply_blocks};
use firstline_investigation::RoundResult;
use firstline_model::faults;
use firstline_model::reactions::{CHECK_MARK, EYES, QUESTION, WARNING};
use firstline_model::text::prefix;
use firstline_workflows::types::{EditInput, FailureInput, PostInput, PostOutcome};

/// Longest failure reason shown in the thread (its first line).
const MAX_REASON_CHARS: usize = 300;
/// Advisory lock class of "posting round N" (`FLPT`).
const POST_LOCK_CLASS: i32 = 0x464c_5054;
/// Thread messages read when looking for an earlier reply.
pub(crate) const REPLIES_SCANNED: u16 = 4_000;

/// Replaces reaction `from` with `to` on message `target`. A reaction is cosmetic: whatever
/// Slack answers (`message_not_found` for a deleted message, a rate limit, an outage) is logged
/// and counted, never a round's failure.
pub(crate) async fn swap_reaction(
    slack: &SlackApi,
    channel: &str,
    target: &str,
    from: &str,
    to: &str,
) {
    let count = |e: &firstline_slack::SlackApiError| {
        let code = match e {
            firstline_slack::SlackApiError::Api { code, .. } => code.clone(),
            _ => "unreachable".to_string(),
        };
        metrics::counter!(crate::metrics::REACTION_FAILURES, "code" => code).increment(1);
    };
    if let Err(e) = slack.remove_reaction(channel, target, from).await {
        count(&e);
        tracing::debug!(error = %e, reaction = from, "could not remove a reaction");
    }
    if let Err(e) = slack.add_reaction(channel, target, to).await {
        count(&e);
        tracing::warn!(error = %e, reaction = to, %target, "could not react; the round goes on");
    }
}

/// Posts round `input.round` unless it is already posted.
pub async fn post_to_thread(
    pool: &PgPool,
    slack: &SlackApi,
    input: &PostInput,
) -> Result<PostOutcome, RoundError> {
    let (thread_id, round) = (input.thread_id, input.round);
    let row: Option<CommittedRound> = sqlx::query_as(
        "SELECT id, grounded, result, posted_ts, post_attempted_at IS NOT NULL AS attempted
           FROM rounds WHERE thread_id = $1 AND number = $2",
    )
    .bind(thread_id)
    .bind(round as i32)
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else {
        return Err(RoundError::NotCommitted { thread_id, round });
    };
    // One attempt at a time: a slow attempt that outlived its timeout must not post while its
    // retry does. The lock is the connection's; it goes when the attempt (or its process) does.
    let mut lock = pool.acquire().await?;
    let key = (POST_LOCK_CLASS, (row.id % i64::from(i32::MAX)) as i32);
    let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
        .bind(key.0)
        .bind(key.1)
        .fetch_one(&mut *lock)
        .await?;
    if !locked {
        return Err(RoundError::PostInProgress { round });
    }
    let result = post_locked(pool, slack, input, row).await;
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

/// A committed round as posting sees it.
#[derive(sqlx::FromRow)]
struct CommittedRound {
    id: i64,
    grounded: bool,
    result: serde_json::Value,
    posted_ts: Option<String>,
    /// An earlier attempt started posting (it may have posted before it died).
    attempted: bool,
}

/// The post itself, under the round's post lock.
async fn post_locked(
    pool: &PgPool,
    slack: &SlackApi,
    input: &PostInput,
    row: CommittedRound,
) -> Result<PostOutcome, RoundError> {
    let (thread_id, round) = (input.thread_id, input.round);
    let channel = &input.thread.channel_id;
    let CommittedRound {
        id: round_id,
        grounded,
        result,
        posted_ts,
        attempted,
    } = row;

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
                    let result: RoundResult =
                        serde_json::from_value(result).map_err(|error| RoundError::BadResult {
                            thread_id,
                            round,
                            error,
                        })?;
                    sqlx::query("UPDATE rounds SET post_attempted_at = now() WHERE id = $1")
                        .bind(round_id)
                        .execute(pool)
                        .await?;
                    let action = firstline_store::actions::of_round(pool, round_id).await?;
                    let (blocks, shown) =
                        reply_blocks(pool, thread_id, round_id, &result, round).await?;
                    let message = OutgoingMessage {
                        channel: channel.clone(),
                        thread_ts: Some(input.thread.thread_ts.clone()),
                        text: result.text.clone(),
                        blocks: Some(blocks.into()),
                        metadata: Some(round_metadata(thread_id, round, grounded)),
                    };
                    let ts = slack.post_message(&message).await?;
                    if let Some(action) = &action {
                        firstline_store::actions::set_message(pool, action.id, &ts).await?;
                    }
                    faults::pause(faults::POST_AFTER_SEND).await;
                    store_posted(pool, round_id, &ts).await?;
                    if let Some((group_id, count)) = shown {
                        let mut conn = pool.acquire().await?;
                        firstline_store::groups::set_shown(&mut conn, group_id, count).await?;
                    }
                    tracing::info!(%ts, grounded, "reply posted");
                    (ts, true)
                }
            }
        }
    };

    // The buttons a click comes from are in this message: the bot binds a decision to it.
    if let Some(action) = firstline_store::actions::of_round(pool, round_id).await? {
        firstline_store::actions::set_message(pool, action.id, &ts).await?;
    }
    // Alerts linked while the reply was being posted are listed now; the list is cosmetic, so
    // failing to show it never fails the posted round (the next link shows it).
    if let Some(member) = firstline_store::groups::membership_of(pool, thread_id)
        .await?
        .filter(|m| !m.is_linked())
        && let Err(e) = refresh(pool, slack, member.group_id).await
    {
        tracing::warn!(error = %e, "could not list the alerts linked meanwhile");
    }
    for target in &input.react_to {
        let reaction = if grounded { CHECK_MARK } else { QUESTION };
        swap_reaction(slack, channel, target, EYES, reaction).await;
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

/// Shows the refined round in the reply already posted (chat.update), once: `edited_at` marks
/// it done, and an edit repeated by a retry replaces the message with the same content. The
/// reactions on the messages the round answered follow the refined verdict.
pub async fn edit_post(
    pool: &PgPool,
    slack: &SlackApi,
    input: &EditInput,
) -> Result<PostOutcome, RoundError> {
    let (thread_id, round) = (input.thread_id, input.round);
    let row: Option<PostedRound> = sqlx::query_as(
        "SELECT id, grounded, result, posted_ts, edited_at IS NOT NULL AS edited
           FROM rounds WHERE thread_id = $1 AND number = $2",
    )
    .bind(thread_id)
    .bind(round as i32)
    .fetch_optional(pool)
    .await?;
    let Some(PostedRound {
        id: round_id,
        grounded,
        result,
        posted_ts,
        edited,
    }) = row
    else {
        return Err(RoundError::NotCommitted { thread_id, round });
    };
    let Some(ts) = posted_ts else {
        return Err(RoundError::NotPosted { thread_id, round });
    };
    if edited {
        return Ok(PostOutcome {
            ts,
            posted_now: false,
        });
    }
    let result: RoundResult =
        serde_json::from_value(result).map_err(|error| RoundError::BadResult {
            thread_id,
            round,
            error,
        })?;
    let channel = &input.thread.channel_id;
    replace(
        pool,
        slack,
        &Posted {
            channel,
            thread_id,
            round_id,
            round,
            result: &result,
            ts: &ts,
        },
        false,
    )
    .await?;
    faults::pause(faults::EDIT_AFTER_SEND).await;
    let (now, before) = if grounded {
        (CHECK_MARK, QUESTION)
    } else {
        (QUESTION, CHECK_MARK)
    };
    for target in &input.react_to {
        swap_reaction(slack, channel, target, before, now).await;
    }
    sqlx::query("UPDATE rounds SET edited_at = now() WHERE id = $1")
        .bind(round_id)
        .execute(pool)
        .await?;
    tracing::info!(%ts, "reply edited with the refined round");
    Ok(PostOutcome {
        ts,
        posted_now: false,
    })
}

/// A posted round as editing sees it.
#[derive(sqlx::FromRow)]
struct PostedRound {
    id: i64,
    grounded: bool,
    result: serde_json::Value,
    posted_ts: Option<String>,
    /// The reply already shows the refined round.
    edited: bool,
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
                prefix(
                    input.reason.lines().next().unwrap_or_default(),
                    MAX_REASON_CHARS
                )
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
        swap_reaction(slack, channel, target, EYES, WARNING).await;
    }
    Ok(PostOutcome { ts, posted_now })
}
