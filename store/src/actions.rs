//! `actions`: proposals a round made from its verified cause, and the audit of each — who decided
//! and when, the execution and its result, the verification. Every step is a conditional update
//! on the row's state, so it happens once whoever races for it: two approvers, a replayed click,
//! a click after expiry, a retried execution.
//!
//! The bot decides (a click) and the worker proposes, expires, executes and verifies; both go
//! through here. A decision and its `wake` outbox row commit together, as does an action's last
//! state and its `publish` row (its [`ActionRecord`] for the topic).

use chrono::{DateTime, Utc};
use firstline_model::{
    ACTION_SCHEMA, Action, ActionRecord, ActionState, Decision, DecisionSignal, DecisionWake,
    ThreadKey,
};
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{PgPool, Postgres, Transaction};

/// A proposal to store.
#[derive(Debug, Clone)]
pub struct NewAction {
    pub thread_id: i64,
    pub round_id: i64,
    pub action: Action,
    pub cause: String,
    /// The exact write and what it changes (shown to the approver).
    pub change: Value,
    /// sha256 hex of the change.
    pub change_hash: String,
    pub expires_at: DateTime<Utc>,
}

/// One `actions` row, with its thread and round for the record.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRow {
    pub id: i64,
    pub thread_id: i64,
    pub thread: ThreadKey,
    pub round: u32,
    pub action: Action,
    pub object: String,
    pub cause: String,
    pub change: Value,
    pub change_hash: String,
    pub state: ActionState,
    pub message_ts: Option<String>,
    pub proposed_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub attempts: i32,
    /// An attempt began sending the write (it may have landed).
    pub write_sent: bool,
    pub executed_at: Option<DateTime<Utc>>,
    pub result: Option<String>,
    pub verification: Option<Value>,
    /// The outcome's reply: whether posting it began, and its ts once stored.
    pub outcome_attempted: bool,
    pub outcome_ts: Option<String>,
}

impl ActionRow {
    /// The row as its Kafka record.
    pub fn record(&self) -> ActionRecord {
        ActionRecord {
            schema: ACTION_SCHEMA.to_string(),
            action_id: self.id,
            thread: self.thread.clone(),
            round: self.round,
            action: self.action.clone(),
            cause: self.cause.clone(),
            change_hash: self.change_hash.clone(),
            state: self.state,
            proposed_at: self.proposed_at.to_rfc3339(),
            decided_by: self.decided_by.clone(),
            decided_at: self.decided_at.map(|t| t.to_rfc3339()),
            executed_at: self.executed_at.map(|t| t.to_rfc3339()),
            result: self.result.clone(),
            verification: self.verification.clone(),
        }
    }
}

#[derive(sqlx::FromRow)]
struct Raw {
    id: i64,
    thread_id: i64,
    team_id: String,
    channel_id: String,
    thread_ts: String,
    round: i32,
    action: Json<Action>,
    object: String,
    cause: String,
    change: Json<Value>,
    change_hash: String,
    state: String,
    message_ts: Option<String>,
    proposed_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    decided_by: Option<String>,
    decided_at: Option<DateTime<Utc>>,
    attempts: i32,
    write_sent: bool,
    executed_at: Option<DateTime<Utc>>,
    result: Option<String>,
    verification: Option<Json<Value>>,
    outcome_attempted: bool,
    outcome_ts: Option<String>,
}

impl Raw {
    fn row(self) -> Result<ActionRow, sqlx::Error> {
        let state = ActionState::parse(&self.state).ok_or_else(|| {
            sqlx::Error::Decode(format!("actions.state `{}` is no state", self.state).into())
        })?;
        Ok(ActionRow {
            id: self.id,
            thread_id: self.thread_id,
            thread: ThreadKey {
                team_id: self.team_id,
                channel_id: self.channel_id,
                thread_ts: self.thread_ts,
            },
            round: u32::try_from(self.round).unwrap_or(0),
            action: self.action.0,
            object: self.object,
            cause: self.cause,
            change: self.change.0,
            change_hash: self.change_hash,
            state,
            message_ts: self.message_ts,
            proposed_at: self.proposed_at,
            expires_at: self.expires_at,
            decided_by: self.decided_by,
            decided_at: self.decided_at,
            attempts: self.attempts,
            write_sent: self.write_sent,
            executed_at: self.executed_at,
            result: self.result,
            verification: self.verification.map(|v| v.0),
            outcome_attempted: self.outcome_attempted,
            outcome_ts: self.outcome_ts,
        })
    }
}

const SELECT: &str =
    "SELECT a.id, a.thread_id, t.team_id, t.channel_id, t.thread_ts, r.number AS round,
        a.action, a.object, a.cause, a.change, a.change_hash, a.state, a.message_ts, a.proposed_at,
        a.expires_at, a.decided_by, a.decided_at, a.attempts, a.write_sent_at IS NOT NULL AS write_sent, a.executed_at, a.result,
        a.verification, a.outcome_attempted_at IS NOT NULL AS outcome_attempted, a.outcome_ts
   FROM actions a JOIN threads t ON t.id = a.thread_id JOIN rounds r ON r.id = a.round_id";

async fn fetch(
    executor: impl sqlx::PgExecutor<'_>,
    id: i64,
) -> Result<Option<ActionRow>, sqlx::Error> {
    sqlx::query_as::<_, Raw>(&format!("{SELECT} WHERE a.id = $1"))
        .bind(id)
        .fetch_optional(executor)
        .await?
        .map(Raw::row)
        .transpose()
}

/// The action `id`.
pub async fn get(pool: &PgPool, id: i64) -> Result<Option<ActionRow>, sqlx::Error> {
    fetch(pool, id).await
}

/// The action round `round_id` proposed, if it did.
pub async fn of_round(pool: &PgPool, round_id: i64) -> Result<Option<ActionRow>, sqlx::Error> {
    sqlx::query_as::<_, Raw>(&format!("{SELECT} WHERE a.round_id = $1"))
        .bind(round_id)
        .fetch_optional(pool)
        .await?
        .map(Raw::row)
        .transpose()
}

/// The actions of thread `thread_id`, oldest first (recall reads what was done).
pub async fn of_thread(pool: &PgPool, thread_id: i64) -> Result<Vec<ActionRow>, sqlx::Error> {
    sqlx::query_as::<_, Raw>(&format!("{SELECT} WHERE a.thread_id = $1 ORDER BY a.id"))
        .bind(thread_id)
        .fetch_all(pool)
        .await?
        .into_iter()
        .map(Raw::row)
        .collect()
}

/// Stores a proposal once per round: a retry returns the row the first attempt stored.
pub async fn propose(pool: &PgPool, new: &NewAction) -> Result<ActionRow, sqlx::Error> {
    let inserted: Option<i64> = sqlx::query_scalar(
        "INSERT INTO actions (thread_id, round_id, action, object, cause, change, change_hash, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (round_id) DO NOTHING
         RETURNING id",
    )
    .bind(new.thread_id)
    .bind(new.round_id)
    .bind(Json(&new.action))
    .bind(new.action.object().to_string())
    .bind(&new.cause)
    .bind(Json(&new.change))
    .bind(&new.change_hash)
    .bind(new.expires_at)
    .fetch_optional(pool)
    .await?;
    let id = match inserted {
        Some(id) => id,
        None => {
            sqlx::query_scalar("SELECT id FROM actions WHERE round_id = $1")
                .bind(new.round_id)
                .fetch_one(pool)
                .await?
        }
    };
    fetch(pool, id).await?.ok_or(sqlx::Error::RowNotFound)
}

/// Records the reply that shows action `id`.
pub async fn set_message(pool: &PgPool, id: i64, ts: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE actions SET message_ts = $2 WHERE id = $1")
        .bind(id)
        .bind(ts)
        .execute(pool)
        .await?;
    Ok(())
}

/// What a click on Approve or Reject came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Decided {
    /// This click decided it (and its round is woken).
    Recorded(ActionRow),
    /// Someone decided first, or it expired: the row as it stands.
    AlreadyDecided(ActionRow),
    /// The proposal's time ran out before the click (the round will say so).
    TooLate(ActionRow),
    /// The click was for another change than the one stored (a forged or stale button).
    OtherChange(ActionRow),
    /// No such action.
    Unknown,
}

/// Records `user`'s `decision` on action `id`, shown as the change hashed `hash`: only while it
/// is proposed and unexpired, so exactly one decision is ever recorded. The round's `wake` row
/// (and, for a rejection, the action's record) commit with it.
pub async fn decide(
    pool: &PgPool,
    id: i64,
    hash: &str,
    user: &str,
    decision: Decision,
    traceparent: Option<String>,
) -> Result<Decided, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let state = match decision {
        Decision::Approve => ActionState::Approved,
        Decision::Reject => ActionState::Rejected,
    };
    let updated = sqlx::query(
        "UPDATE actions SET state = $4, decided_by = $3, decided_at = now()
          WHERE id = $1 AND change_hash = $2 AND state = 'proposed' AND expires_at > now()",
    )
    .bind(id)
    .bind(hash)
    .bind(user)
    .bind(state.as_str())
    .execute(&mut *tx)
    .await?;
    let Some(row) = fetch(&mut *tx, id).await? else {
        return Ok(Decided::Unknown);
    };
    if updated.rows_affected() == 0 {
        tx.rollback().await?;
        return Ok(if row.change_hash != hash {
            Decided::OtherChange(row)
        } else if row.state == ActionState::Proposed {
            Decided::TooLate(row)
        } else {
            Decided::AlreadyDecided(row)
        });
    }
    let wake = DecisionWake {
        thread: row.thread.clone(),
        decision: DecisionSignal {
            action_id: id,
            decision,
            user: user.to_string(),
        },
        traceparent,
    };
    outbox(
        &mut tx,
        &row,
        "wake",
        serde_json::to_value(&wake).unwrap_or_default(),
    )
    .await?;
    if state == ActionState::Rejected {
        publish(&mut tx, &row).await?;
    }
    tx.commit().await?;
    Ok(Decided::Recorded(row))
}

/// Marks action `id` expired if nobody decided it; the row as it stands either way (an approval
/// that won the race is executed, not expired).
pub async fn expire(pool: &PgPool, id: i64) -> Result<Option<ActionRow>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let updated =
        sqlx::query("UPDATE actions SET state = 'expired' WHERE id = $1 AND state = 'proposed'")
            .bind(id)
            .execute(&mut *tx)
            .await?;
    let row = fetch(&mut *tx, id).await?;
    if let (Some(row), 1) = (&row, updated.rows_affected()) {
        publish(&mut tx, row).await?;
    }
    tx.commit().await?;
    Ok(row)
}

/// What starting an execution found.
#[derive(Debug, Clone, PartialEq)]
pub enum Execution {
    /// Approved and not finished: go ahead (attempt `n`, counting this one).
    Start { attempt: i32, row: ActionRow },
    /// An earlier attempt finished it: its outcome, never a second write.
    Finished(ActionRow),
    /// Not approved (rejected, expired, still proposed): nothing may be written.
    NotApproved(ActionRow),
}

/// Counts an execution attempt of action `id`, if it may run.
pub async fn start_execution(pool: &PgPool, id: i64) -> Result<Execution, sqlx::Error> {
    let attempt: Option<i32> = sqlx::query_scalar(
        "UPDATE actions SET attempts = attempts + 1 WHERE id = $1 AND state = 'approved'
         RETURNING attempts",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?;
    let row = fetch(pool, id).await?.ok_or(sqlx::Error::RowNotFound)?;
    Ok(match (attempt, row.state) {
        (Some(attempt), _) => Execution::Start { attempt, row },
        (None, ActionState::Executed | ActionState::Failed) => Execution::Finished(row),
        (None, _) => Execution::NotApproved(row),
    })
}

/// Marks that action `id`'s write is about to be sent (kept from the first attempt on).
pub async fn write_sent(pool: &PgPool, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE actions SET write_sent_at = coalesce(write_sent_at, now()) WHERE id = $1 AND state = 'approved'",
    )
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}

/// Stores the outcome of action `id`'s write, once: `executed` with what the server answered,
/// or `failed` with why nothing was written (its record is then published). Returns the row as
/// it stands (an earlier attempt's outcome if one was stored first).
pub async fn finish_execution(
    pool: &PgPool,
    id: i64,
    executed: bool,
    result: &str,
) -> Result<ActionRow, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let state = if executed {
        ActionState::Executed
    } else {
        ActionState::Failed
    };
    let updated = sqlx::query(
        "UPDATE actions SET state = $2, result = $3, executed_at = CASE WHEN $4 THEN now() END
          WHERE id = $1 AND state = 'approved'",
    )
    .bind(id)
    .bind(state.as_str())
    .bind(result)
    .bind(executed)
    .execute(&mut *tx)
    .await?;
    let row = fetch(&mut *tx, id).await?.ok_or(sqlx::Error::RowNotFound)?;
    if updated.rows_affected() == 1 && !executed {
        publish(&mut tx, &row).await?;
    }
    tx.commit().await?;
    Ok(row)
}

/// Stores what the evidence showed after action `id` ran, once, and publishes its record.
pub async fn verified(
    pool: &PgPool,
    id: i64,
    verification: &Value,
) -> Result<ActionRow, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let updated = sqlx::query(
        "UPDATE actions SET verification = $2, verified_at = now()
          WHERE id = $1 AND state = 'executed' AND verification IS NULL",
    )
    .bind(id)
    .bind(Json(verification))
    .execute(&mut *tx)
    .await?;
    let row = fetch(&mut *tx, id).await?.ok_or(sqlx::Error::RowNotFound)?;
    if updated.rows_affected() == 1 {
        publish(&mut tx, &row).await?;
    }
    tx.commit().await?;
    Ok(row)
}

/// Marks that the outcome reply of action `id` is about to be posted.
pub async fn outcome_attempted(pool: &PgPool, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE actions SET outcome_attempted_at = now() WHERE id = $1")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

/// Stores the ts of action `id`'s outcome reply (the first one stored stays).
pub async fn outcome_posted(pool: &PgPool, id: i64, ts: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE actions SET outcome_ts = $2 WHERE id = $1 AND outcome_ts IS NULL")
        .bind(id)
        .bind(ts)
        .execute(pool)
        .await?;
    Ok(())
}

async fn publish(tx: &mut Transaction<'_, Postgres>, row: &ActionRow) -> Result<(), sqlx::Error> {
    let record = serde_json::to_value(row.record()).unwrap_or_default();
    outbox(tx, row, "publish", record).await
}

async fn outbox(
    tx: &mut Transaction<'_, Postgres>,
    row: &ActionRow,
    kind: &str,
    payload: Value,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO outbox (kind, thread_id, action_id, payload) VALUES ($1, $2, $3, $4)
         ON CONFLICT (action_id, kind) DO NOTHING",
    )
    .bind(kind)
    .bind(row.thread_id)
    .bind(row.id)
    .bind(payload)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
