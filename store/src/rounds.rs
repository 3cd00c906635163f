//! `rounds`: one row per committed round. The worker writes them (`commit_round`) and reads them
//! back for the next round's context; the bot reads the latest ones when a resolution turns the
//! thread into an incident.
//!
//! Beside the whole result (`result` jsonb, the worker's own format), a round stores the outline
//! others read as typed columns — headline, first cause, posted text, questions asked (`asked`,
//! typed [`Question`]s) — so a reader never digs into the worker's JSON by path, whatever shape
//! it takes later.

use firstline_model::Question;
use sqlx::types::Json;
use sqlx::{PgConnection, PgPool};

/// What a round said, in brief.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct RoundOutline {
    /// The report's one-line headline.
    pub headline: String,
    /// The strongest suspected cause, when the report had one.
    pub cause: Option<String>,
    /// The text posted to the thread.
    pub text: String,
    /// Whether the judge let it post a summary.
    pub grounded: bool,
    /// Whether anyone marked its reply "Wrong cause" (`round_feedback`).
    pub marked_wrong: bool,
}

/// The thread's latest round, and its latest grounded round nobody marked wrong (often the same
/// one).
pub async fn latest_outlines(
    conn: &mut PgConnection,
    thread_id: i64,
) -> Result<(Option<RoundOutline>, Option<RoundOutline>), sqlx::Error> {
    let latest: Option<RoundOutline> = sqlx::query_as(
        "SELECT headline, cause, text, grounded,
                EXISTS (SELECT 1 FROM round_feedback f
                         WHERE f.round_id = r.id AND f.verdict = 'wrong') AS marked_wrong
           FROM rounds r WHERE thread_id = $1 ORDER BY number DESC LIMIT 1",
    )
    .bind(thread_id)
    .fetch_optional(&mut *conn)
    .await?;
    let grounded = match &latest {
        Some(round) if round.grounded && !round.marked_wrong => Some(round.clone()),
        _ => {
            // A round people marked wrong is never the incident's cause.
            sqlx::query_as(
                "SELECT headline, cause, text, grounded, false AS marked_wrong FROM rounds r
                  WHERE thread_id = $1 AND grounded
                    AND NOT EXISTS (SELECT 1 FROM round_feedback f
                                     WHERE f.round_id = r.id AND f.verdict = 'wrong')
                  ORDER BY number DESC LIMIT 1",
            )
            .bind(thread_id)
            .fetch_optional(&mut *conn)
            .await?
        }
    };
    Ok((latest, grounded))
}

/// A committed round as the next round of its thread recalls it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct RoundRecap {
    pub number: i32,
    pub grounded: bool,
    pub headline: String,
    pub cause: Option<String>,
    /// What it asked the thread (empty when it posted a summary).
    pub questions: Json<Vec<Question>>,
    /// Its reply's ts, once posted.
    pub posted_ts: Option<String>,
    /// When it started: what people wrote after this, it did not read.
    pub started_at: chrono::DateTime<chrono::Utc>,
}

/// Every committed round of thread `thread_id`, oldest first.
pub async fn recaps(pool: &PgPool, thread_id: i64) -> Result<Vec<RoundRecap>, sqlx::Error> {
    sqlx::query_as(
        "SELECT number, grounded, headline, cause, asked AS questions, posted_ts, started_at
           FROM rounds
          WHERE thread_id = $1 ORDER BY number",
    )
    .bind(thread_id)
    .fetch_all(pool)
    .await
}

/// Question `index` of round `round` in the thread `thread`, when `message_ts` is that round's
/// posted reply — the message a click came from — and the round is the thread's latest; `None`
/// otherwise (a forged or stale click).
pub async fn question_at(
    pool: &PgPool,
    thread: &firstline_model::ThreadKey,
    round: u32,
    index: u32,
    message_ts: &str,
) -> Result<Option<Question>, sqlx::Error> {
    let asked: Option<Json<Question>> = sqlx::query_scalar(
        "SELECT r.asked -> $6::int FROM rounds r JOIN threads t ON t.id = r.thread_id
          WHERE t.team_id = $1 AND t.channel_id = $2 AND t.thread_ts = $3
            AND r.number = $4 AND r.posted_ts = $5 AND r.number = t.rounds
            AND jsonb_array_length(r.asked) > $6::int",
    )
    .bind(&thread.team_id)
    .bind(&thread.channel_id)
    .bind(&thread.thread_ts)
    .bind(i32::try_from(round).unwrap_or(i32::MAX))
    .bind(message_ts)
    .bind(i32::try_from(index).unwrap_or(i32::MAX))
    .fetch_optional(pool)
    .await?;
    Ok(asked.map(|q| q.0))
}

/// The id of round `round` of thread `thread` when `message_ts` is its posted reply (feedback may
/// be given on any round's reply, not only the latest); `None` otherwise.
pub async fn posted_round(
    pool: &PgPool,
    thread: &firstline_model::ThreadKey,
    round: u32,
    message_ts: &str,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT r.id FROM rounds r JOIN threads t ON t.id = r.thread_id
          WHERE t.team_id = $1 AND t.channel_id = $2 AND t.thread_ts = $3
            AND r.number = $4 AND r.posted_ts = $5",
    )
    .bind(&thread.team_id)
    .bind(&thread.channel_id)
    .bind(&thread.thread_ts)
    .bind(i32::try_from(round).unwrap_or(i32::MAX))
    .bind(message_ts)
    .fetch_optional(pool)
    .await
}
