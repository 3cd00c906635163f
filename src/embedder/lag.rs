//! Consumer lag, for `/metrics` and for KEDA's Kafka scaler's view of the same thing: per
//! assigned partition, the high watermark minus the group's committed offset, every few seconds.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::Offset;
use rdkafka::consumer::{Consumer, StreamConsumer};
use tokio_util::sync::CancellationToken;

use super::metrics::LAG;

/// How often lag is measured.
const EVERY: Duration = Duration::from_secs(5);
/// Longest wait for one broker answer while measuring.
const BROKER_TIMEOUT: Duration = Duration::from_secs(3);

/// Measures lag until cancelled.
pub async fn watch(consumer: Arc<StreamConsumer>, cancel: CancellationToken) {
    let mut ticker = tokio::time::interval(EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let consumer = Arc::clone(&consumer);
        // librdkafka's queries block the thread they run on.
        match tokio::task::spawn_blocking(move || measure(&consumer)).await {
            Ok(Ok(lags)) => {
                for (partition, lag) in lags {
                    metrics::gauge!(LAG, "partition" => partition.to_string()).set(lag as f64);
                }
            }
            Ok(Err(e)) => tracing::debug!(error = %e, "lag not measured"),
            Err(e) => tracing::debug!(error = %e, "lag task failed"),
        }
    }
}

/// `(partition, lag)` for each assigned partition.
fn measure(consumer: &StreamConsumer) -> Result<Vec<(i32, i64)>, rdkafka::error::KafkaError> {
    let assigned = consumer.assignment()?;
    if assigned.count() == 0 {
        return Ok(Vec::new());
    }
    let committed = consumer.committed_offsets(assigned, BROKER_TIMEOUT)?;
    let mut lags = Vec::new();
    for element in committed.elements() {
        let (low, high) =
            consumer.fetch_watermarks(element.topic(), element.partition(), BROKER_TIMEOUT)?;
        let from = match element.offset() {
            Offset::Offset(offset) => offset,
            // Nothing committed yet: everything retained is still to read.
            _ => low,
        };
        lags.push((element.partition(), (high - from).max(0)));
    }
    Ok(lags)
}
