//! Metric names and the Prometheus exporter behind `GET /metrics`.
//!
//! Metrics go through the `metrics` facade; the binary installs the Prometheus recorder once
//! ([`install`]). Tests that never install it record into a no-op recorder.

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;

/// Counter: events handled, by `outcome` (stored, duplicate, ignored, error, rejected) and `kind`.
pub const EVENTS: &str = "firstline_bot_events_total";
/// Histogram: seconds from classification to commit.
pub const INGEST_SECONDS: &str = "firstline_bot_ingest_seconds";
/// Histogram: messages per ingest transaction (group commit).
pub const INGEST_BATCH_SIZE: &str = "firstline_bot_ingest_batch_size";
/// Counter: batches the database rejected, recorded again one message per transaction.
pub const INGEST_BATCH_SPLITS: &str = "firstline_bot_ingest_batch_splits_total";
/// Counter: outbox delivery attempts, by `relay` and `outcome` (ok, error).
pub const RELAY_ATTEMPTS: &str = "firstline_relay_attempts_total";
/// Histogram: seconds from outbox row creation to delivery, by `relay`.
pub const RELAY_LAG_SECONDS: &str = "firstline_relay_lag_seconds";
/// Gauge: age in seconds of the oldest undelivered row at the last claim, by `relay`.
pub const RELAY_OLDEST_PENDING_SECONDS: &str = "firstline_relay_oldest_pending_seconds";
/// Counter: delivered outbox rows deleted by retention.
pub const OUTBOX_PRUNED: &str = "firstline_outbox_pruned_total";
/// Counter: threads resolved at ingest, by `via` (mention, recovery_alert, check_mark).
pub const RESOLUTIONS: &str = "firstline_bot_resolutions_total";
/// Counter: Slack retries seen (`X-Slack-Retry-Num` present), by `reason`.
pub const SLACK_RETRIES: &str = "firstline_bot_slack_retries_total";

/// Installs the Prometheus recorder (once per process) and returns its handle.
pub fn install() -> Option<PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| match PrometheusBuilder::new().install_recorder() {
            Ok(handle) => Some(handle),
            Err(e) => {
                tracing::warn!(error = %e, "metrics recorder not installed");
                None
            }
        })
        .clone()
}
