//! Recording one classified message: ONE Postgres transaction (thread upsert, message insert
//! deduplicated on `event_id` and `(channel, ts)`, outbox rows, and the resolution the message
//! causes, if any — [`crate::resolution`]), committed before Slack is acked (DESIGN invariants
//! 1–3). A duplicate inserts nothing and is acked like a success. Alerts and mentions get a
//! `wake` row, except recovery alerts (recorded and published, never woken).

use crate::model::Incoming;
use crate::resolution;
use crate::schema::{MessageRecord, WakeRecord};
use sqlx::PgPool;

/// What recording did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Stored as `messages.id`, with its outbox rows.
    Stored {
        /// The new message's id.
        message_id: i64,
        /// Whether a `wake` row was written.
        wakes: bool,
        /// The thread this message resolved (`threads.id`), if any.
        resolved: Option<i64>,
    },
    /// Already stored (same `event_id`, or same `(channel, ts)`): nothing written.
    Duplicate,
}

/// Records `message` in one transaction. Any error leaves nothing behind (the transaction is
/// rolled back when dropped). `bot_user_id` recognises the mention token of a resolved-mention.
pub async fn record(
    pool: &PgPool,
    message: &Incoming,
    bot_user_id: &str,
) -> Result<Recorded, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let thread_id: i64 = sqlx::query_scalar(
        "INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ($1, $2, $3)
         ON CONFLICT (team_id, channel_id, thread_ts)
         DO UPDATE SET last_activity_at = now()
         RETURNING id",
    )
    .bind(&message.thread.team_id)
    .bind(&message.thread.channel_id)
    .bind(&message.thread.thread_ts)
    .fetch_one(&mut *tx)
    .await?;
    let inserted: Option<(i64, chrono::DateTime<chrono::Utc>)> = sqlx::query_as(
        "INSERT INTO messages (thread_id, event_id, team_id, channel_id, ts, thread_ts, kind,
                               user_id, bot_id, app_id, username, text, raw)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         ON CONFLICT DO NOTHING
         RETURNING id, received_at",
    )
    .bind(thread_id)
    .bind(&message.event_id)
    .bind(&message.thread.team_id)
    .bind(&message.thread.channel_id)
    .bind(&message.ts)
    .bind(&message.thread_ts)
    .bind(message.kind.as_str())
    .bind(&message.user_id)
    .bind(&message.bot_id)
    .bind(&message.app_id)
    .bind(&message.username)
    .bind(&message.text)
    .bind(&message.raw)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((message_id, received_at)) = inserted else {
        tx.rollback().await?;
        return Ok(Recorded::Duplicate);
    };
    let publish = serde_json::to_value(MessageRecord::new(message_id, message, received_at))
        .map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let resolved = resolution::on_message(&mut tx, message, thread_id, bot_user_id)
        .await?
        .map(|r| r.thread_id);
    let wakes = message.kind.wakes() && !resolution::is_recovery_alert(message);
    let wake = if wakes {
        Some(
            serde_json::to_value(WakeRecord::new(message))
                .map_err(|e| sqlx::Error::Encode(Box::new(e)))?,
        )
    } else {
        None
    };
    sqlx::query(
        "INSERT INTO outbox (kind, thread_id, message_id, payload)
         SELECT k, $1, $2, p FROM unnest($3::text[], $4::jsonb[]) AS t(k, p)",
    )
    .bind(thread_id)
    .bind(message_id)
    .bind(if wakes {
        vec!["publish", "wake"]
    } else {
        vec!["publish"]
    })
    .bind(match wake {
        Some(w) => vec![publish, w],
        None => vec![publish],
    })
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Recorded::Stored {
        message_id,
        wakes,
        resolved,
    })
}
