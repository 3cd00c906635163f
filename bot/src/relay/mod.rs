//! Outbox relays: background tasks that move committed outbox rows to Kafka (`publish`) and to
//! Temporal (`wake`), safe with several bot replicas.
//!
//! Each pass claims due rows with `FOR UPDATE SKIP LOCKED` inside a transaction, delivers them,
//! marks each delivered row `sent_at` (or schedules its retry with capped exponential backoff),
//! and commits. A replica that dies mid-pass never commits: its rows unlock and another replica
//! delivers them (at-least-once; consumers dedupe on `message_id`). Failures of the database
//! itself back the loop off the same way. Every loop stops on its cancellation token.

pub mod kafka;
pub mod outbox;
pub mod prune;
pub mod temporal;

use crate::metrics as names;
use backon::{BackoffBuilder, ExponentialBuilder};
use firstline_model::faults;
use outbox::{OutboxKind, OutboxRow};
use sqlx::PgPool;
use std::future::Future;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Where a relay delivers rows.
pub trait Sink: Send + Sync + 'static {
    /// The outbox kind this sink delivers.
    fn kind(&self) -> OutboxKind;

    /// Delivers `rows`; one result per row, in order. `Err` holds a one-line reason.
    fn deliver(&self, rows: &[OutboxRow]) -> impl Future<Output = Vec<Result<(), String>>> + Send;
}

/// How a relay paces itself.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// Rows per claim.
    pub batch: u32,
    /// Sleep when nothing is due.
    pub poll: Duration,
    /// First retry delay of a failed row (and of the loop after a database error).
    pub backoff_initial: Duration,
    /// Cap on those delays.
    pub backoff_max: Duration,
}

impl RelayConfig {
    /// From `bot.*` settings.
    pub fn from_settings(bot: &firstline_config::BotSettings) -> Self {
        Self {
            batch: bot.relay_batch,
            poll: Duration::from_millis(bot.relay_poll_ms),
            backoff_initial: Duration::from_millis(bot.relay_backoff_initial_ms),
            backoff_max: Duration::from_secs(bot.relay_backoff_max_secs),
        }
    }

    fn backoff(&self) -> ExponentialBuilder {
        ExponentialBuilder::default()
            .with_min_delay(self.backoff_initial)
            .with_max_delay(self.backoff_max)
            .with_factor(2.0)
            .with_jitter()
            .without_max_times()
    }

    /// Delay before the next try of a row that has failed `attempts` times (≥ 1).
    pub fn retry_delay(&self, attempts: i32) -> Duration {
        let n = usize::try_from(attempts.max(1) - 1).unwrap_or(0).min(64);
        self.backoff()
            .build()
            .nth(n)
            .unwrap_or(self.backoff_max)
            .min(self.backoff_max)
    }
}

/// Runs one relay until `cancel` fires.
pub async fn run<S: Sink>(pool: PgPool, sink: S, config: RelayConfig, cancel: CancellationToken) {
    let relay = sink.kind().as_str();
    tracing::info!(relay, "outbox relay started");
    let mut db_backoff = config.backoff().build();
    loop {
        let pass = tokio::select! {
            _ = cancel.cancelled() => break,
            pass = pass(&pool, &sink, &config) => pass,
        };
        let pause = match pass {
            Ok(claimed) if claimed == config.batch as usize => {
                db_backoff = config.backoff().build();
                continue;
            }
            Ok(_) => {
                db_backoff = config.backoff().build();
                config.poll
            }
            Err(e) => {
                let delay = db_backoff.next().unwrap_or(config.backoff_max);
                tracing::warn!(relay, error = %e, retry_in_ms = delay.as_millis() as u64, "outbox relay pass failed");
                delay
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(pause) => {}
        }
    }
    tracing::info!(relay, "outbox relay stopped");
}

/// One claim → deliver → mark → commit. Returns how many rows it claimed.
#[tracing::instrument(level = "debug", skip_all, fields(relay = sink.kind().as_str()))]
pub async fn pass<S: Sink>(
    pool: &PgPool,
    sink: &S,
    config: &RelayConfig,
) -> Result<usize, sqlx::Error> {
    let kind = sink.kind();
    let mut tx = pool.begin().await?;
    let rows = outbox::claim(&mut tx, kind, config.batch).await?;
    if rows.is_empty() {
        tx.commit().await?;
        return Ok(0);
    }
    if let Some(oldest) = rows.iter().map(|r| r.created_at).min() {
        let age = (chrono::Utc::now() - oldest).num_milliseconds().max(0) as f64 / 1000.0;
        metrics::gauge!(names::RELAY_OLDEST_PENDING_SECONDS, "relay" => kind.as_str()).set(age);
    }
    faults::pause(faults::RELAY_AFTER_CLAIM).await;
    let results = sink.deliver(&rows).await;
    faults::pause(faults::RELAY_AFTER_DELIVER).await;
    let mut sent = Vec::new();
    for (row, result) in rows
        .iter()
        .zip(results.into_iter().chain(std::iter::repeat_with(|| {
            Err("no delivery result".to_string())
        })))
    {
        match result {
            Ok(()) => {
                metrics::counter!(names::RELAY_ATTEMPTS, "relay" => kind.as_str(), "outcome" => "ok")
                    .increment(1);
                let lag = (chrono::Utc::now() - row.created_at)
                    .num_milliseconds()
                    .max(0) as f64;
                metrics::histogram!(names::RELAY_LAG_SECONDS, "relay" => kind.as_str())
                    .record(lag / 1000.0);
                sent.push(row.id);
            }
            Err(reason) => {
                metrics::counter!(names::RELAY_ATTEMPTS, "relay" => kind.as_str(), "outcome" => "error")
                    .increment(1);
                let delay = config.retry_delay(row.attempts + 1);
                tracing::debug!(id = row.id, attempts = row.attempts + 1, %reason, "delivery failed; will retry");
                outbox::mark_failed(&mut tx, row.id, &reason, delay).await?;
            }
        }
    }
    outbox::mark_sent(&mut tx, &sent).await?;
    tx.commit().await?;
    if sent.len() < rows.len() {
        tracing::warn!(
            relay = kind.as_str(),
            failed = rows.len() - sent.len(),
            delivered = sent.len(),
            "some outbox rows were not delivered; they will be retried"
        );
    }
    Ok(rows.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_grow_and_are_capped() {
        let config = RelayConfig {
            batch: 10,
            poll: Duration::from_millis(10),
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(2),
        };
        // Jitter adds up to one more delay; the base doubles.
        let first = config.retry_delay(1);
        assert!(
            first >= Duration::from_millis(100) && first <= Duration::from_millis(200),
            "{first:?}"
        );
        let fourth = config.retry_delay(4);
        assert!(fourth >= Duration::from_millis(800), "{fourth:?}");
        for attempts in [10, 30, 1000] {
            assert!(config.retry_delay(attempts) <= Duration::from_secs(2));
        }
    }
}
