//! A round's reply as it stands — the round, its proposed action and, on a group's primary, the
//! alerts linked to it — and the one place a posted reply is replaced with it.
//!
//! Several workers may replace one reply at once (a linked alert's `post_link` on one, the
//! primary's `edit_post` or `show_action` on another). Each renders what Postgres holds *while
//! holding the thread's reply lock* and updates the message before releasing it, so the last
//! update Slack applies is always rendered from the newest state.

use firstline_investigation::RoundResult;
use firstline_slack::SlackApi;
use firstline_store::groups;
use serde_json::Value;
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};

use super::blocks::{MAX_LISTED, linked_block};
use crate::RoundError;
use crate::action::blocks::with_action;
use crate::blocks::{above_feedback, round_blocks};

/// Advisory lock class of "replacing thread N's reply" (`FLRP`).
const REPLY_LOCK_CLASS: i32 = 0x464c_5250;
/// Longest wait for another worker's replacement of the same reply (a Slack call).
const LOCK_WAIT: &str = "20s";

/// The reply of round `round` (`rounds.id` `round_id`) of thread `thread_id`, as it stands now,
/// and — when the thread is a group's primary — the group and how many linked alerts it shows.
pub async fn reply_blocks(
    pool: &PgPool,
    thread_id: i64,
    round_id: i64,
    result: &RoundResult,
    round: u32,
) -> Result<(Vec<Value>, Option<(i64, i64)>), RoundError> {
    let mut blocks = match firstline_store::actions::of_round(pool, round_id).await? {
        Some(action) => with_action(round_blocks(result, round), &action),
        None => round_blocks(result, round),
    };
    let shown = match groups::membership_of(pool, thread_id).await? {
        Some(member) if !member.is_linked() => {
            let (count, newest) = groups::linked(pool, member.group_id, MAX_LISTED).await?;
            if let Some(block) = linked_block(count, &newest) {
                blocks = above_feedback(blocks, vec![block]);
            }
            Some((member.group_id, count))
        }
        _ => None,
    };
    Ok((blocks, shown))
}

/// A posted round reply to replace.
pub struct Posted<'a> {
    pub channel: &'a str,
    pub thread_id: i64,
    pub round_id: i64,
    pub round: u32,
    pub result: &'a RoundResult,
    /// The message's ts.
    pub ts: &'a str,
}

/// Replaces `posted` with the reply as it stands now, under the thread's reply lock, and records
/// how many linked alerts it shows. With `only_if_more`, nothing is sent when the reply already
/// shows as many linked alerts as there are (checked under the lock: another worker may have
/// just shown them).
pub async fn replace(
    pool: &PgPool,
    slack: &SlackApi,
    posted: &Posted<'_>,
    only_if_more: bool,
) -> Result<(), RoundError> {
    // The lock is waited for on a connection of its own, outside the pool: replacements queued
    // behind it must not hold the pooled connections the one holding it renders with.
    let mut lock = pool.connect_options().connect().await?;
    sqlx::query(&format!("SET lock_timeout = '{LOCK_WAIT}'"))
        .execute(&mut lock)
        .await?;
    sqlx::query("SELECT pg_advisory_lock($1, $2)")
        .bind(REPLY_LOCK_CLASS)
        .bind((posted.thread_id % i64::from(i32::MAX)) as i32)
        .execute(&mut lock)
        .await?;
    let replaced = replace_locked(pool, &mut lock, slack, posted, only_if_more).await;
    // Closing the connection releases the lock, whatever happened.
    if let Err(e) = lock.close().await {
        tracing::debug!(error = %e, "closing the reply lock's connection");
    }
    replaced
}

async fn replace_locked(
    pool: &PgPool,
    lock: &mut PgConnection,
    slack: &SlackApi,
    posted: &Posted<'_>,
    only_if_more: bool,
) -> Result<(), RoundError> {
    let (blocks, shown) = reply_blocks(
        pool,
        posted.thread_id,
        posted.round_id,
        posted.result,
        posted.round,
    )
    .await?;
    if let (true, Some((group_id, count))) = (only_if_more, shown) {
        let showing: Option<i32> =
            sqlx::query_scalar("SELECT shown FROM incident_groups WHERE id = $1")
                .bind(group_id)
                .fetch_optional(&mut *lock)
                .await?;
        if showing.is_some_and(|n| count <= i64::from(n)) {
            return Ok(());
        }
    }
    slack
        .update_message(
            posted.channel,
            posted.ts,
            &posted.result.text,
            Some(blocks.into()),
        )
        .await?;
    if let Some((group_id, count)) = shown {
        groups::set_shown(lock, group_id, count).await?;
    }
    Ok(())
}

/// The primary's latest posted round, as [`refresh`] replaces it.
#[derive(sqlx::FromRow)]
struct PrimaryReply {
    thread_id: i64,
    channel_id: String,
    shown: i32,
    round_id: i64,
    number: i32,
    result: Value,
    posted_ts: String,
}

/// Edits group `group_id`'s primary reply when more alerts have joined than it shows. Nothing to
/// do before the primary has posted: its reply lists what has joined by then.
pub async fn refresh(pool: &PgPool, slack: &SlackApi, group_id: i64) -> Result<(), RoundError> {
    let primary: Option<PrimaryReply> = sqlx::query_as(
        "SELECT g.primary_thread_id AS thread_id, t.channel_id, g.shown, r.id AS round_id,
                r.number, r.result, r.posted_ts
           FROM incident_groups g
           JOIN threads t ON t.id = g.primary_thread_id
           JOIN LATERAL (SELECT id, number, result, posted_ts FROM rounds
                          WHERE thread_id = g.primary_thread_id AND posted_ts IS NOT NULL
                          ORDER BY number DESC LIMIT 1) r ON true
          WHERE g.id = $1",
    )
    .bind(group_id)
    .fetch_optional(pool)
    .await?;
    let Some(primary) = primary else {
        return Ok(());
    };
    let (count, _) = groups::linked(pool, group_id, 0).await?;
    if count <= i64::from(primary.shown) {
        return Ok(());
    }
    let round = u32::try_from(primary.number).unwrap_or(0);
    let result: RoundResult =
        serde_json::from_value(primary.result).map_err(|error| RoundError::BadResult {
            thread_id: primary.thread_id,
            round,
            error,
        })?;
    replace(
        pool,
        slack,
        &Posted {
            channel: &primary.channel_id,
            thread_id: primary.thread_id,
            round_id: primary.round_id,
            round,
            result: &result,
            ts: &primary.posted_ts,
        },
        true,
    )
    .await?;
    tracing::info!(
        group_id,
        linked = count,
        "the primary's reply lists its linked alerts"
    );
    Ok(())
}
