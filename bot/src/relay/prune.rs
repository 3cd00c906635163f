//! Outbox retention: delivered rows are kept `bot.outbox_retention_hours` for whoever traces a
//! delivery, then deleted, so the table stays the size of that window instead of growing with
//! every message ever received. Undelivered rows are never deleted, however old: they are the
//! relays' work.
//!
//! Each bot running a relay prunes once at start and then every [`PRUNE_EVERY`], in batches of
//! [`BATCH`] rows (`SKIP LOCKED`, so replicas pruning at once split the work), at most
//! [`MAX_BATCHES`] per pass: a backlog is worked off over several passes, never in one long
//! transaction. Rows are found by age through the `outbox_created_at_brin` index (0008).

use crate::telemetry;
use sqlx::PgPool;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Time between passes.
pub const PRUNE_EVERY: Duration = Duration::from_secs(600);
/// Rows deleted per statement.
pub const BATCH: i64 = 5_000;
/// Statements per pass.
pub const MAX_BATCHES: u32 = 100;
/// Longest one statement may take.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a pass stopped early.
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    /// The database refused or failed.
    #[error("pruning the outbox: {0}")]
    Database(#[from] sqlx::Error),
    /// A statement ran past [`STATEMENT_TIMEOUT`].
    #[error("pruning the outbox: no answer within {STATEMENT_TIMEOUT:?}")]
    Timeout,
}

/// Deletes delivered rows sent more than `keep` ago, `batch` at a time, at most `max_batches`
/// statements. Returns how many rows it deleted.
pub async fn prune(
    pool: &PgPool,
    keep: Duration,
    batch: i64,
    max_batches: u32,
) -> Result<u64, PruneError> {
    let mut deleted = 0;
    for _ in 0..max_batches {
        // `sent_at` is never earlier than `created_at`: the `created_at` bound lets the BRIN
        // index skip the recent block ranges without changing which rows qualify.
        let statement = sqlx::query(
            "DELETE FROM outbox WHERE id IN (
                 SELECT id FROM outbox
                  WHERE created_at < now() - make_interval(secs => $1)
                    AND sent_at < now() - make_interval(secs => $1)
                  LIMIT $2
                  FOR UPDATE SKIP LOCKED)",
        )
        .bind(keep.as_secs_f64())
        .bind(batch)
        .execute(pool);
        let rows = tokio::time::timeout(STATEMENT_TIMEOUT, statement)
            .await
            .map_err(|_| PruneError::Timeout)??
            .rows_affected();
        deleted += rows;
        if rows < batch.unsigned_abs() {
            break;
        }
    }
    Ok(deleted)
}

/// Prunes at start and every [`PRUNE_EVERY`] until `cancel` fires.
pub async fn run(pool: PgPool, keep: Duration, cancel: CancellationToken) {
    loop {
        match prune(&pool, keep, BATCH, MAX_BATCHES).await {
            Ok(0) => {}
            Ok(deleted) => {
                metrics::counter!(telemetry::OUTBOX_PRUNED).increment(deleted);
                tracing::info!(deleted, "pruned delivered outbox rows");
            }
            // The next pass tries again; nothing is lost meanwhile, the table only grows.
            Err(e) => tracing::warn!(error = %e, "outbox pruning failed"),
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(PRUNE_EVERY) => {}
        }
    }
}
