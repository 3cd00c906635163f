//! The consuming loop: a reader task moves records from Kafka into a bounded queue; the loop
//! takes batches from it (up to `embedder.batch_max`, waiting at most `embedder.batch_wait_ms`
//! to fill one), embeds them, writes the vectors in one transaction, and only then commits the
//! batch's offsets. The queue bounds what is read ahead of the model; librdkafka's own fetch
//! queue bounds what is read ahead of the queue.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use backon::{ExponentialBuilder, Retryable};
use firstline_config::{EmbedderSettings, Settings};
use firstline_embed::Embedder;
use firstline_model::{TopicRecord, faults};
use firstline_store::PgPool;
use firstline_store::embeddings::{self, is_person_message};

use super::metrics::{BATCH_SECONDS, CONSUMER_ERRORS, RECORDS, RETRIES, VECTORS_WRITTEN};
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Characters of one text given to the model at most: the local model reads 256 word pieces,
/// and a pasted log of megabytes must not cost megabytes of tokenising.
const MAX_TEXT_CHARS: usize = 4_000;
/// Attempts at embedding or writing one batch before the embedder gives up and exits (nothing
/// of the batch is committed, so a restart redoes it).
const MAX_ATTEMPTS: usize = 12;

/// A started embedder: connected, subscribed, serving `/healthz`; call [`EmbedderHandle::run`].
pub struct EmbedderHandle {
    /// Where `/healthz` and `/metrics` listen.
    pub http_addr: SocketAddr,
    consumer: Arc<StreamConsumer>,
    pool: PgPool,
    embedder: Arc<dyn Embedder>,
    settings: EmbedderSettings,
    topic: String,
    cancel: CancellationToken,
    healthy: Arc<AtomicBool>,
}

/// Connects to Postgres, loads and checks the embedding model (a dimension that does not fit the
/// columns fails here), and joins the consumer group.
pub async fn start_embedder(
    settings: &Settings,
    embedder: Arc<dyn Embedder>,
    cancel: CancellationToken,
) -> anyhow::Result<EmbedderHandle> {
    let pool = firstline_store::connect(&settings.database).await?;
    crate::embedding::check(&pool, embedder.as_ref()).await?;
    let mut config = ClientConfig::new();
    for (key, value) in settings.kafka.client_properties()? {
        config.set(key, value);
    }
    if !settings.embedder.instance_id.trim().is_empty() {
        // Static membership: a restarted member takes its place at once instead of waiting for
        // the dead one's session to expire.
        config.set("group.instance.id", settings.embedder.instance_id.trim());
    }
    let consumer: StreamConsumer = config
        .set("group.id", &settings.embedder.group_id)
        .set(
            "client.id",
            format!("firstline-embedder@{}", std::process::id()),
        )
        // Offsets are committed by hand, after the rows are written.
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        // A replacement for a member that died (kill -9) gets its partitions within seconds: the
        // dead member's session expires, and a rebalance waits for members at most the poll
        // interval (the reader task polls continuously while the queue has room).
        .set("session.timeout.ms", "10000")
        .set("max.poll.interval.ms", "20000")
        // The topic may not exist yet (the bot creates it on its first publish).
        .set("topic.metadata.refresh.interval.ms", "5000")
        .set("reconnect.backoff.max.ms", "2000")
        .create()
        .with_context(|| format!("creating the Kafka consumer for {}", settings.kafka.brokers))?;
    consumer
        .subscribe(&[settings.kafka.topic.as_str()])
        .with_context(|| format!("subscribing to {}", settings.kafka.topic))?;
    let healthy = Arc::new(AtomicBool::new(false));
    let http_addr = crate::health::serve(
        &settings.embedder.listen,
        Arc::clone(&healthy),
        "not consuming",
        cancel.clone(),
    )
    .await
    .with_context(|| format!("embedder.listen {}", settings.embedder.listen))?;
    Ok(EmbedderHandle {
        http_addr,
        consumer: Arc::new(consumer),
        pool,
        embedder,
        settings: settings.embedder.clone(),
        topic: settings.kafka.topic.clone(),
        cancel,
        healthy,
    })
}

impl EmbedderHandle {
    /// Consumes until the cancellation token fires, then finishes the batch in hand, commits it
    /// and returns. An error is a batch that could not be embedded or written after every retry.
    pub async fn run(self) -> anyhow::Result<()> {
        let (queue, mut batches) = mpsc::channel(self.settings.queue_capacity);
        let reader = tokio::spawn(read(Arc::clone(&self.consumer), queue, self.cancel.clone()));
        let lag = tokio::spawn(super::lag::watch(
            Arc::clone(&self.consumer),
            self.cancel.clone(),
        ));
        self.healthy.store(true, Ordering::SeqCst);
        tracing::info!(topic = %self.topic, group = %self.settings.group_id, model = self.embedder.model(), "embedder consuming");
        let mut last_commit: Option<TopicPartitionList> = None;
        let outcome = loop {
            let batch = next_batch(
                &mut batches,
                self.settings.batch_max,
                Duration::from_millis(self.settings.batch_wait_ms),
                &self.cancel,
            )
            .await;
            if batch.is_empty() {
                break Ok(());
            }
            let started = Instant::now();
            if let Err(e) = self.process(&batch).await {
                break Err(e);
            }
            faults::pause(faults::EMBEDDER_AFTER_WRITE).await;
            let offsets = next_offsets(&batch);
            if let Err(e) = self.consumer.commit(&offsets, CommitMode::Async) {
                // The rows are written; the records come again after a restart and change
                // nothing. The next batch's commit covers these offsets too.
                tracing::warn!(error = %e, "committing offsets failed");
            }
            last_commit = Some(offsets);
            metrics::histogram!(BATCH_SECONDS).record(started.elapsed().as_secs_f64());
        };
        self.healthy.store(false, Ordering::SeqCst);
        self.cancel.cancel();
        let _ = reader.await;
        let _ = lag.await;
        // Make the last asynchronous commit durable before leaving the group.
        if let Some(offsets) = last_commit {
            let consumer = Arc::clone(&self.consumer);
            let grace = Duration::from_secs(self.settings.shutdown_grace_secs);
            let committed = tokio::time::timeout(
                grace,
                tokio::task::spawn_blocking(move || consumer.commit(&offsets, CommitMode::Sync)),
            )
            .await;
            match committed {
                Ok(Ok(Ok(()))) => tracing::info!("offsets committed; embedder stopped"),
                Ok(Ok(Err(e))) => tracing::warn!(error = %e, "final commit failed"),
                Ok(Err(e)) => tracing::warn!(error = %e, "final commit task failed"),
                Err(_) => tracing::warn!(?grace, "final commit did not finish in time"),
            }
        }
        self.pool.close().await;
        outcome
    }

    /// Embeds and writes one batch's records (retrying each stage with backoff); unreadable
    /// records are logged and counted.
    async fn process(&self, batch: &[OwnedMessage]) -> anyhow::Result<()> {
        let mut messages = BTreeMap::new();
        let mut incidents = BTreeMap::new();
        for record in batch {
            let decoded = match record.payload() {
                Some(value) => TopicRecord::decode(value),
                None => Err("the record has no value".to_string()),
            };
            match decoded {
                Ok(TopicRecord::Message(message)) => {
                    let person = is_person_message(
                        &message.kind,
                        message.user_id.as_deref(),
                        message.bot_id.as_deref(),
                        &message.text,
                    );
                    if person {
                        messages.insert(message.message_id, clipped(&message.text));
                    } else {
                        metrics::counter!(RECORDS, "outcome" => "skipped").increment(1);
                    }
                }
                Ok(TopicRecord::Incident(incident)) => {
                    incidents.insert(incident.incident_id, clipped(&incident.text));
                }
                // An action's audit is for other readers: nothing a person wrote to embed.
                Ok(TopicRecord::Action(_)) => {
                    metrics::counter!(RECORDS, "outcome" => "skipped").increment(1);
                }
                Err(reason) => {
                    tracing::warn!(
                        topic = record.topic(),
                        partition = record.partition(),
                        offset = record.offset(),
                        %reason,
                        "unreadable record skipped"
                    );
                    metrics::counter!(RECORDS, "outcome" => "poison").increment(1);
                }
            }
        }
        if messages.is_empty() && incidents.is_empty() {
            return Ok(());
        }
        let texts: Vec<String> = messages
            .values()
            .chain(incidents.values())
            .cloned()
            .collect();
        let vectors = self
            .retrying("embed", || self.embedder.embed(&texts))
            .await
            .context("embedding a batch")?;
        if vectors.len() != texts.len() {
            anyhow::bail!(
                "the embedding model returned {} vectors for {} texts",
                vectors.len(),
                texts.len()
            );
        }
        let mut vectors = vectors.into_iter();
        let message_vectors: Vec<(i64, Vec<f32>)> =
            messages.keys().copied().zip(vectors.by_ref()).collect();
        let incident_vectors: Vec<(i64, Vec<f32>)> =
            incidents.keys().copied().zip(vectors).collect();
        let model = self.embedder.model();
        let (messages_written, incidents_written) = self
            .retrying("write", || {
                embeddings::write(&self.pool, model, &message_vectors, &incident_vectors)
            })
            .await
            .context("writing a batch's vectors")?;
        metrics::counter!(RECORDS, "outcome" => "embedded").increment(texts.len() as u64);
        metrics::counter!(VECTORS_WRITTEN, "kind" => "message").increment(messages_written);
        metrics::counter!(VECTORS_WRITTEN, "kind" => "incident").increment(incidents_written);
        tracing::debug!(
            records = batch.len(),
            messages_written,
            incidents_written,
            "batch embedded"
        );
        Ok(())
    }

    /// `attempt`, retried with exponential backoff (`embedder.retry_*`) up to [`MAX_ATTEMPTS`]
    /// times; a stopping embedder gives it `embedder.shutdown_grace_secs` more, then gives up
    /// (the batch is not committed, so nothing is lost).
    async fn retrying<T, E, Fut>(
        &self,
        stage: &'static str,
        attempt: impl FnMut() -> Fut,
    ) -> anyhow::Result<T>
    where
        Fut: Future<Output = Result<T, E>>,
        E: std::fmt::Display,
    {
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(self.settings.retry_initial_ms))
            .with_max_delay(Duration::from_secs(self.settings.retry_max_secs))
            .with_max_times(MAX_ATTEMPTS - 1)
            .with_jitter();
        let retried = attempt.retry(backoff).notify(|error: &E, delay: Duration| {
            metrics::counter!(RETRIES, "stage" => stage).increment(1);
            tracing::warn!(stage, %error, ?delay, "embedder stage failed; retrying");
        });
        let grace = Duration::from_secs(self.settings.shutdown_grace_secs);
        let out_of_time = async {
            self.cancel.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            result = retried => result.map_err(|e| anyhow::anyhow!("{stage}: {e}")),
            () = out_of_time => anyhow::bail!("{stage}: not done within the shutdown grace"),
        }
    }
}

/// Moves records from the consumer into the queue until cancelled (or the loop is gone).
async fn read(
    consumer: Arc<StreamConsumer>,
    queue: mpsc::Sender<OwnedMessage>,
    cancel: CancellationToken,
) {
    loop {
        let received = tokio::select! {
            () = cancel.cancelled() => return,
            received = consumer.recv() => received.map(|message| message.detach()),
        };
        match received {
            Ok(message) => {
                let sent = tokio::select! {
                    () = cancel.cancelled() => return,
                    sent = queue.send(message) => sent,
                };
                if sent.is_err() {
                    return;
                }
            }
            Err(e) => {
                metrics::counter!(CONSUMER_ERRORS).increment(1);
                tracing::warn!(error = %e, "Kafka consumer error; retrying");
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        }
    }
}

/// The next batch: waits for a first record (or the stop), then takes more until `max` or
/// `wait` has passed. Empty only when stopping.
async fn next_batch(
    queue: &mut mpsc::Receiver<OwnedMessage>,
    max: usize,
    wait: Duration,
    cancel: &CancellationToken,
) -> Vec<OwnedMessage> {
    let mut batch = Vec::with_capacity(max);
    tokio::select! {
        biased;
        () = cancel.cancelled() => return batch,
        first = queue.recv() => match first {
            Some(record) => batch.push(record),
            None => return batch,
        },
    }
    let deadline = tokio::time::Instant::now() + wait;
    while batch.len() < max {
        match tokio::time::timeout_at(deadline, queue.recv()).await {
            Ok(Some(record)) => batch.push(record),
            Ok(None) | Err(_) => break,
        }
    }
    batch
}

/// The offsets to commit after `batch`: one past the highest offset seen per partition.
fn next_offsets(batch: &[OwnedMessage]) -> TopicPartitionList {
    let mut highest: BTreeMap<(&str, i32), i64> = BTreeMap::new();
    for record in batch {
        let entry = highest
            .entry((record.topic(), record.partition()))
            .or_insert(record.offset());
        *entry = (*entry).max(record.offset());
    }
    let mut offsets = TopicPartitionList::new();
    for ((topic, partition), offset) in highest {
        // Adding a partition to a fresh list cannot fail; an error here would be a bug in the
        // list itself, so it is logged rather than allowed to stop the loop.
        if let Err(e) = offsets.add_partition_offset(topic, partition, Offset::Offset(offset + 1)) {
            tracing::warn!(error = %e, topic, partition, "offset not added to the commit");
        }
    }
    offsets
}

fn clipped(text: &str) -> String {
    firstline_model::text::prefix(text, MAX_TEXT_CHARS).to_string()
}

#[cfg(test)]
mod tests {
    use super::next_offsets;
    use rdkafka::Offset;
    use rdkafka::message::{OwnedMessage, Timestamp};

    fn record(partition: i32, offset: i64) -> OwnedMessage {
        OwnedMessage::new(
            None,
            None,
            "firstline.messages".into(),
            Timestamp::NotAvailable,
            partition,
            offset,
            None,
        )
    }

    #[test]
    fn commits_one_past_the_highest_offset_of_each_partition() {
        let offsets = next_offsets(&[record(0, 7), record(1, 3), record(0, 9), record(0, 8)]);
        let listed: Vec<(i32, Offset)> = offsets
            .elements()
            .iter()
            .map(|e| (e.partition(), e.offset()))
            .collect();
        assert_eq!(listed, [(0, Offset::Offset(10)), (1, Offset::Offset(4))]);
    }
}
