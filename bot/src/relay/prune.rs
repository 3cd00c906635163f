//! Outbox retention: delivered rows are kept `bot.outbox_retention_hours` for whoever traces a
//! delivery, then deleted, so the table stays the size of that window instead of growing with
//! every message ever received. Undelivered rows are never deleted, however old: they are the
//! relays' work.
//!
//! Each bot running a relay prunes once at start and then every [`PRUNE_EVERY`], in batches of
//! [`BATCH`] rows (`SKIP LOCKED`, so replicas pruning at once split the work), at most
//! [`MAX_BATCHES`] per pass: a backlog is worked off over several passes, never in one long
//! transaction. No index of its own: ids grow with `created_at`, so the rows old enough all sit
//! at the start of the primary key, below the first id created after the cutoff, and a batch is
//! a short range scan there (measured: 17 ms per 5,000 rows, 7 ms for an empty pass, in a table
//! of 600,000 rows), while the ingest and relay statements maintain nothing extra.

use crate::metrics as names;
use sqlx::PgPool;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Time between passes.
pub const PRUNE_EVERY: Duration = Duration::from_secs(600);
/// Rows deleted per statement.
pub const BATCH: u32 = 5_000;
/// Statements per pass.
pub const MAX_BATCHES: u32 = 100;
/// Longest one statement may run, on the server and as the client waits for it.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a pass stopped early.
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    /// The database refused or failed (a statement past its timeout included).
    #[error("pruning the outbox: {0}")]
    Database(#[from] sqlx::Error),
    /// No answer within [`STATEMENT_TIMEOUT`].
    #[error("pruning the outbox: no answer within {STATEMENT_TIMEOUT:?}")]
    Timeout,
}

/// Deletes delivered rows sent more than `keep` ago, `batch` at a time, at most `max_batches`
/// statements. Returns how many rows it deleted.
pub async fn prune(
    pool: &PgPool,
    keep: Duration,
    batch: u32,
    max_batches: u32,
) -> Result<u64, PruneError> {
    let mut deleted = 0;
    for _ in 0..max_batches {
        let rows = tokio::time::timeout(STATEMENT_TIMEOUT, delete_batch(pool, keep, batch))
            .await
            .map_err(|_| PruneError::Timeout)??;
        deleted += rows;
        if rows < u64::from(batch) {
            break;
        }
    }
    Ok(deleted)
}

/// One statement in its own transaction, bounded on the server too.
async fn delete_batch(pool: &PgPool, keep: Duration, batch: u32) -> Result<u64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query(&format!(
        "SET LOCAL statement_timeout = {}",
        STATEMENT_TIMEOUT.as_millis()
    ))
    .execute(&mut *tx)
    .await?;
    // `= ANY(ARRAY(…))` makes the delete itself a primary-key lookup per id; `IN (…)` was
    // planned as a sequential scan of the whole table.
    let rows = sqlx::query(
        "DELETE FROM outbox WHERE id = ANY(ARRAY(
             SELECT id FROM outbox
              WHERE id < coalesce((SELECT id FROM outbox
                                    WHERE created_at >= now() - make_interval(secs => $1)
                                    ORDER BY id LIMIT 1),
                                  9223372036854775807)
                AND sent_at < now() - make_interval(secs => $1)
              ORDER BY id
              LIMIT $2
              FOR UPDATE SKIP LOCKED))",
    )
    .bind(keep.as_secs_f64())
    .bind(i64::from(batch))
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(rows)
}

/// Prunes at start and every [`PRUNE_EVERY`] until `cancel` fires.
pub async fn run(pool: PgPool, keep: Duration, cancel: CancellationToken) {
    tracing::info!(
        keep_hours = keep.as_secs() / 3600,
        "outbox retention started"
    );
    loop {
        let pass = tokio::select! {
            _ = cancel.cancelled() => break,
            pass = prune(&pool, keep, BATCH, MAX_BATCHES) => pass,
        };
        match pass {
            Ok(0) => {}
            Ok(deleted) => {
                metrics::counter!(names::OUTBOX_PRUNED).increment(deleted);
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
    tracing::info!("outbox retention stopped");
}
