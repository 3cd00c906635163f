//! `round_feedback`: what people said of a round's reply ("Helpful", "Wrong cause"), one row per
//! person per round, and the listing of rounds marked wrong with their evidence — the start of a
//! lab scenario for the case the bot got wrong.

use chrono::{DateTime, Utc};
use firstline_model::Verdict;
use sqlx::PgPool;
use sqlx::types::Json;

/// Records `user`'s `verdict` on round `round_id`: one row per person per round, a later click
/// replacing their earlier verdict. Returns whether anything changed (a repeat changes nothing).
pub async fn record(
    pool: &PgPool,
    round_id: i64,
    user: &str,
    verdict: Verdict,
) -> Result<bool, sqlx::Error> {
    let changed = sqlx::query(
        "INSERT INTO round_feedback (round_id, user_id, verdict) VALUES ($1, $2, $3)
         ON CONFLICT (round_id, user_id) DO UPDATE
            SET verdict = excluded.verdict, updated_at = now()
          WHERE round_feedback.verdict <> excluded.verdict",
    )
    .bind(round_id)
    .bind(user)
    .bind(verdict.as_str())
    .execute(pool)
    .await?;
    Ok(changed.rows_affected() > 0)
}

/// Stores `text`, the right cause as `user` wrote it, on their "wrong" verdict on round
/// `round_id`. Returns whether they had marked it wrong (else nothing is stored).
pub async fn note(
    pool: &PgPool,
    round_id: i64,
    user: &str,
    text: &str,
) -> Result<bool, sqlx::Error> {
    let stored = sqlx::query(
        "UPDATE round_feedback SET note = nullif($3, ''), updated_at = now()
          WHERE round_id = $1 AND user_id = $2 AND verdict = 'wrong'",
    )
    .bind(round_id)
    .bind(user)
    .bind(text)
    .execute(pool)
    .await?;
    Ok(stored.rows_affected() > 0)
}

/// A round people marked wrong, with what it said and read.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct WrongRound {
    pub team_id: String,
    pub channel_id: String,
    pub thread_ts: String,
    pub number: i32,
    pub headline: String,
    pub cause: Option<String>,
    /// The alert as posted (the thread's first alert message).
    pub alert: Option<String>,
    /// Who marked it wrong.
    pub users: Vec<String>,
    /// The right causes they wrote, when they did.
    pub notes: Vec<String>,
    pub marked_at: DateTime<Utc>,
    /// Its evidence: `(id, capability, excerpt)`, in order.
    pub evidence: Json<Vec<(String, String, String)>>,
}

/// Rounds marked wrong by anyone, newest mark first, at most `limit`.
pub async fn wrong_rounds(pool: &PgPool, limit: i64) -> Result<Vec<WrongRound>, sqlx::Error> {
    sqlx::query_as(
        "SELECT t.team_id, t.channel_id, t.thread_ts, r.number, r.headline, r.cause,
                (SELECT m.text FROM messages m WHERE m.thread_id = t.id AND m.kind = 'alert'
                  ORDER BY m.ts::numeric LIMIT 1) AS alert,
                array_agg(f.user_id ORDER BY f.updated_at) AS users,
                coalesce(array_agg(f.note ORDER BY f.updated_at) FILTER (WHERE f.note IS NOT NULL),
                         '{}') AS notes,
                max(f.updated_at) AS marked_at,
                coalesce((SELECT jsonb_agg(jsonb_build_array(e.ref, e.capability, e.excerpt)
                                           ORDER BY e.id)
                            FROM evidence e WHERE e.round_id = r.id), '[]') AS evidence
           FROM round_feedback f
           JOIN rounds r ON r.id = f.round_id
           JOIN threads t ON t.id = r.thread_id
          WHERE f.verdict = 'wrong'
          GROUP BY t.id, r.id
          ORDER BY max(f.updated_at) DESC
          LIMIT $1",
    )
    .bind(limit)
    .fetch_all(pool)
    .await
}
