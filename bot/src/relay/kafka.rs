//! The `publish` sink: each row's topic record (a `MessageRecord`, or an `IncidentRecord` for a
//! resolved thread) to the Kafka topic, keyed by the thread key so a thread's records stay in
//! order on one partition.
//!
//! The producer is idempotent with `acks=all` (no duplicates or reordering from its own retries).
//! librdkafka gives up on a message after `message.timeout.ms`, which is set below our own
//! deadline, so a row is only retried by the relay after the client has stopped trying it.

use super::Sink;
use super::outbox::{OutboxKind, OutboxRow};
use firstline_config::KafkaSettings;
use firstline_model::ThreadKey;
use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::KafkaError;
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;
use serde::Deserialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Why the Kafka sink could not be built.
#[derive(Debug, thiserror::Error)]
pub enum KafkaSetupError {
    #[error("creating the Kafka producer for {brokers}: {source}")]
    Client { brokers: String, source: KafkaError },
    #[error(transparent)]
    Settings(#[from] firstline_config::ConfigError),
}

/// What every topic record (message or incident) has: the thread that is its key.
#[derive(Deserialize)]
struct Keyed {
    thread: ThreadKey,
}

/// Publishes `publish` rows to one topic.
pub struct KafkaSink {
    config: ClientConfig,
    producer: std::sync::Mutex<FutureProducer>,
    admin: AdminClient<DefaultClientContext>,
    topic: String,
    timeout: Duration,
    topic_ready: AtomicBool,
}

impl KafkaSink {
    /// A sink for `kafka.topic` on `kafka.brokers` (with its TLS and SASL settings); `timeout`
    /// bounds each delivery.
    pub fn new(kafka: &KafkaSettings, timeout: Duration) -> Result<Self, KafkaSetupError> {
        let (brokers, topic) = (kafka.brokers.as_str(), kafka.topic.as_str());
        let message_timeout = timeout
            .saturating_sub(Duration::from_secs(1))
            .max(Duration::from_secs(1));
        let mut config = ClientConfig::new();
        for (key, value) in kafka.client_properties()? {
            config.set(key, value);
        }
        config
            .set("client.id", "firstline-bot")
            .set("enable.idempotence", "true")
            .set("acks", "all")
            // The relay sends a claim's rows at once: a compressed batch costs the broker less to
            // receive and store than the same records uncompressed, and lz4 is cheap to make.
            .set("compression.type", "lz4")
            .set(
                "message.timeout.ms",
                message_timeout.as_millis().to_string(),
            )
            .set("socket.timeout.ms", "5000")
            .set("reconnect.backoff.max.ms", "2000");
        let error = |source| KafkaSetupError::Client {
            brokers: brokers.to_string(),
            source,
        };
        Ok(Self {
            producer: std::sync::Mutex::new(config.create().map_err(error)?),
            admin: config.create().map_err(error)?,
            config,
            topic: topic.to_string(),
            timeout,
            topic_ready: AtomicBool::new(false),
        })
    }

    /// Creates the topic when it does not exist (production topics are usually pre-created;
    /// then this is a no-op). The relay calls it before its first publish; `firstline dev`
    /// before anything subscribes.
    pub async fn ensure_topic(&self) -> Result<(), String> {
        if self.topic_ready.load(Ordering::Relaxed) {
            return Ok(());
        }
        let topic = NewTopic::new(&self.topic, 3, TopicReplication::Fixed(1));
        let options = AdminOptions::new().operation_timeout(Some(self.timeout));
        let created =
            tokio::time::timeout(self.timeout, self.admin.create_topics([&topic], &options))
                .await
                .map_err(|_| {
                    format!(
                        "creating topic {}: no answer within {:?}",
                        self.topic, self.timeout
                    )
                })?
                .map_err(|e| format!("creating topic {}: {e}", self.topic))?;
        for result in created {
            match result {
                Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((name, code)) => return Err(format!("creating topic {name}: {code}")),
            }
        }
        self.topic_ready.store(true, Ordering::Relaxed);
        Ok(())
    }
}

impl KafkaSink {
    /// The producer, replaced by a fresh one after a fatal error (an idempotent producer whose
    /// sequence state the broker lost, e.g. across a broker restart, never recovers by itself).
    fn producer(&self) -> FutureProducer {
        let mut producer = self.producer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((code, reason)) = producer.client().fatal_error() {
            tracing::warn!(%code, %reason, "Kafka producer hit a fatal error; creating a new one");
            match self.config.create::<FutureProducer>() {
                Ok(fresh) => *producer = fresh,
                Err(e) => tracing::error!(error = %e, "could not recreate the Kafka producer"),
            }
        }
        producer.clone()
    }
}

impl Sink for KafkaSink {
    fn kind(&self) -> OutboxKind {
        OutboxKind::Publish
    }

    async fn deliver(&self, rows: &[OutboxRow]) -> Vec<Result<(), String>> {
        if let Err(e) = self.ensure_topic().await {
            return rows.iter().map(|_| Err(e.clone())).collect();
        }
        let producer = self.producer();
        // Enqueue all (in id order, so per-key order holds), then await every delivery.
        let mut pending = Vec::with_capacity(rows.len());
        for row in rows {
            let key = match Keyed::deserialize(&row.payload) {
                Ok(record) => record.thread.kafka_key(),
                Err(e) => {
                    pending.push(Err(format!(
                        "outbox row {} is not a topic record: {e}",
                        row.id
                    )));
                    continue;
                }
            };
            let value = row.payload.to_string();
            let record = FutureRecord::to(&self.topic).key(&key).payload(&value);
            pending.push(
                producer
                    .send_result(record)
                    .map_err(|(e, _)| format!("enqueueing: {e}")),
            );
        }
        let deadline = self.timeout + Duration::from_secs(2);
        let mut results = Vec::with_capacity(rows.len());
        for enqueued in pending {
            results.push(match enqueued {
                Err(e) => Err(e),
                Ok(delivery) => match tokio::time::timeout(deadline, delivery).await {
                    Ok(Ok(Ok(_))) => Ok(()),
                    Ok(Ok(Err((e, _)))) => Err(format!("delivery: {e}")),
                    Ok(Err(_)) => Err("delivery: producer dropped the message".into()),
                    Err(_) => Err(format!("delivery: no answer within {deadline:?}")),
                },
            });
        }
        results
    }
}
