//! The tool layer's two tables: `tool_cache` (a call's result by scoped digest, so the same
//! call in the same round is never made twice, even by a retried activity) and `audit` (every
//! call and refusal, invariant 7).
//!
//! The database is optional: `firstline investigate` can run without Postgres, and then there is
//! no persistent cache and no audit trail (the in-memory cache of one round still applies).
//! A failing write is logged and ignored: losing an audit row must not lose the investigation.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgPool;

/// A cached tool answer (already redacted and capped).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CachedAnswer {
    pub is_error: bool,
    pub result: String,
    pub created_at: DateTime<Utc>,
}

/// One audit row.
#[derive(Debug, Clone)]
pub(crate) struct AuditRow<'a> {
    pub actor: &'a str,
    pub thread_id: Option<i64>,
    pub round_number: Option<i32>,
    pub action: &'static str,
    pub target: String,
    pub outcome: &'static str,
    pub duration_ms: Option<i32>,
    pub detail: Value,
}

pub(crate) async fn cached(pool: &PgPool, digest: &str) -> Option<CachedAnswer> {
    let row: Result<Option<(bool, String, DateTime<Utc>)>, sqlx::Error> =
        sqlx::query_as("SELECT is_error, result, created_at FROM tool_cache WHERE digest = $1")
            .bind(digest)
            .fetch_optional(pool)
            .await;
    match row {
        Ok(row) => row.map(|(is_error, result, created_at)| CachedAnswer {
            is_error,
            result,
            created_at,
        }),
        Err(error) => {
            tracing::warn!(%error, "tool cache lookup failed; calling the tool");
            None
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn store(
    pool: &PgPool,
    digest: &str,
    server: &str,
    tool: &str,
    args: &Value,
    is_error: bool,
    result: &str,
    created_at: DateTime<Utc>,
) {
    let outcome = sqlx::query(
        "INSERT INTO tool_cache (digest, server, tool, args, is_error, result, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (digest) DO NOTHING",
    )
    .bind(digest)
    .bind(server)
    .bind(tool)
    .bind(args)
    .bind(is_error)
    .bind(result)
    .bind(created_at)
    .execute(pool)
    .await;
    if let Err(error) = outcome {
        tracing::warn!(%error, server, tool, "storing a tool result in the cache failed");
    }
}

pub(crate) async fn audit(pool: &PgPool, row: AuditRow<'_>) {
    let outcome = sqlx::query(
        "INSERT INTO audit (thread_id, round_number, actor, action, target, outcome, duration_ms, detail) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(row.thread_id)
    .bind(row.round_number)
    .bind(row.actor)
    .bind(row.action)
    .bind(&row.target)
    .bind(row.outcome)
    .bind(row.duration_ms)
    .bind(&row.detail)
    .execute(pool)
    .await;
    if let Err(error) = outcome {
        tracing::warn!(%error, action = row.action, target = %row.target, "writing an audit row failed");
    }
}
