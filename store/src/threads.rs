//! `threads`: one row per Slack thread. The bot creates rows at ingest (inside its batched
//! statement) and resolves them; the worker reads them back when a round starts.

use chrono::{DateTime, Utc};
use firstline_model::ThreadKey;
use sqlx::{PgConnection, PgPool};

/// A thread as a round sees it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ThreadRow {
    pub id: i64,
    /// `open` or `resolved`.
    pub status: String,
    /// Rounds committed so far.
    pub rounds: i32,
}

impl ThreadRow {
    pub fn is_resolved(&self) -> bool {
        self.status == "resolved"
    }
}

/// The thread `key`, if recorded.
pub async fn find(pool: &PgPool, key: &ThreadKey) -> Result<Option<ThreadRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, status, rounds FROM threads
          WHERE team_id = $1 AND channel_id = $2 AND thread_ts = $3",
    )
    .bind(&key.team_id)
    .bind(&key.channel_id)
    .bind(&key.thread_ts)
    .fetch_optional(pool)
    .await
}

/// What resolving a thread changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub key: ThreadKey,
    pub resolved_at: DateTime<Utc>,
}

/// Marks thread `thread_id` resolved, in `conn`'s transaction. `None` when it was not open (the
/// row lock of the update serialises concurrent resolutions: the second finds it resolved).
pub async fn resolve(
    conn: &mut PgConnection,
    thread_id: i64,
) -> Result<Option<Resolved>, sqlx::Error> {
    let updated: Option<(String, String, String, DateTime<Utc>)> = sqlx::query_as(
        "UPDATE threads SET status = 'resolved', resolved_at = now(), last_activity_at = now()
         WHERE id = $1 AND status = 'open'
         RETURNING team_id, channel_id, thread_ts, resolved_at",
    )
    .bind(thread_id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(
        updated.map(|(team_id, channel_id, thread_ts, resolved_at)| Resolved {
            key: ThreadKey {
                team_id,
                channel_id,
                thread_ts,
            },
            resolved_at,
        }),
    )
}

/// Records a thread that is already over (a past incident imported for recall, e.g. by
/// `firstline eval`); returns its id.
pub async fn insert_resolved(
    conn: &mut PgConnection,
    key: &ThreadKey,
    resolved_at: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO threads (team_id, channel_id, thread_ts, status, opened_at, resolved_at)
         VALUES ($1, $2, $3, 'resolved', $4, $4) RETURNING id",
    )
    .bind(&key.team_id)
    .bind(&key.channel_id)
    .bind(&key.thread_ts)
    .bind(resolved_at)
    .fetch_one(&mut *conn)
    .await
}
