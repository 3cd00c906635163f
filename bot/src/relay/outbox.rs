//! The outbox table's SQL: claim due rows (`FOR UPDATE SKIP LOCKED`, served by the
//! `outbox_pending` partial index), mark them sent, or schedule their retry.

use sqlx::{PgConnection, Postgres, Transaction};
use std::time::Duration;

/// Outbox row kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxKind {
    /// To Kafka.
    Publish,
    /// To Temporal.
    Wake,
}

impl OutboxKind {
    /// `outbox.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxKind::Publish => "publish",
            OutboxKind::Wake => "wake",
        }
    }
}

/// A claimed row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OutboxRow {
    /// Row id.
    pub id: i64,
    /// What to send (a `MessageRecord`, an `IncidentRecord`, an `ActionRecord`, a `WakeRecord`
    /// or a `DecisionWake`).
    pub payload: serde_json::Value,
    /// Failed attempts so far.
    pub attempts: i32,
    /// When the message was committed.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// Claims up to `limit` due rows of `kind`, locked until the transaction ends.
pub async fn claim(
    tx: &mut Transaction<'_, Postgres>,
    kind: OutboxKind,
    limit: u32,
) -> Result<Vec<OutboxRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, payload, attempts, created_at FROM outbox
         WHERE sent_at IS NULL AND kind = $1 AND next_attempt_at <= now()
         ORDER BY next_attempt_at, id
         LIMIT $2
         FOR UPDATE SKIP LOCKED",
    )
    .bind(kind.as_str())
    .bind(i64::from(limit))
    .fetch_all(&mut **tx)
    .await
}

/// Queues the topic record of incident `incident_id` (thread `thread_id`) for the `publish`
/// relay, in `conn`'s transaction: the incident and its record commit together or not at all.
pub async fn enqueue_incident(
    conn: &mut PgConnection,
    thread_id: i64,
    incident_id: i64,
    record: &firstline_model::IncidentRecord,
) -> Result<(), sqlx::Error> {
    let payload = serde_json::to_value(record).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    sqlx::query(
        "INSERT INTO outbox (kind, thread_id, incident_id, payload)
         VALUES ('publish', $1, $2, $3)
         ON CONFLICT (incident_id, kind) DO NOTHING",
    )
    .bind(thread_id)
    .bind(incident_id)
    .bind(payload)
    .execute(conn)
    .await
    .map(|_| ())
}

/// Marks `ids` delivered.
pub async fn mark_sent(conn: &mut PgConnection, ids: &[i64]) -> Result<(), sqlx::Error> {
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "UPDATE outbox SET sent_at = now(), attempts = attempts + 1, last_error = NULL
         WHERE id = ANY($1)",
    )
    .bind(ids)
    .execute(conn)
    .await
    .map(|_| ())
}

/// Records a failed attempt and when to try again.
pub async fn mark_failed(
    conn: &mut PgConnection,
    id: i64,
    reason: &str,
    retry_in: Duration,
) -> Result<(), sqlx::Error> {
    let reason = firstline_model::text::prefix(reason, 1000);
    sqlx::query(
        "UPDATE outbox SET attempts = attempts + 1, last_error = $2,
                next_attempt_at = now() + make_interval(secs => $3)
         WHERE id = $1",
    )
    .bind(id)
    .bind(reason)
    .bind(retry_in.as_secs_f64())
    .execute(conn)
    .await
    .map(|_| ())
}
