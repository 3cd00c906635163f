//! Group commit for the ingest path. Every request hands its message to one [`Writer`] and waits
//! for the commit that holds it; the writer's dispatcher takes whatever has queued while earlier
//! transactions were in flight (up to `bot.ingest_batch_max`) and commits it as one batch, with
//! at most `bot.ingest_transactions` batches in flight. Nothing waits for company: a message that
//! arrives alone is committed alone at once, so batching adds no latency, it only removes the
//! per-event statements and fsyncs that capped throughput under load.
//!
//! Each request still gets its answer only after *its* commit (ARCHITECTURE.md, invariant 2). A
//! batch the database rejects (a deadlock, a value Postgres refuses) is retried one message per
//! transaction, so one bad message cannot fail its neighbours; a connection-level failure fails the
//! whole batch at once, and every request in it gets the error (Slack retries each).
//!
//! The dispatcher ends when every [`Writer`] clone is dropped; requests in flight keep their
//! batch's task alive until it has answered them.

use super::{Recorded, Rules, record, record_batch};
use crate::message::Incoming;
use crate::metrics as names;
use sqlx::PgPool;
use std::sync::Arc;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tracing::Instrument;

/// Requests that may queue for the dispatcher before senders wait.
const QUEUE: usize = 4096;

/// Why a message was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The database failed or is unreachable; shared by every message of the batch.
    #[error("recording the message failed: {0}")]
    Database(#[source] Arc<sqlx::Error>),
    /// The writer is gone (shutting down, or its batch task panicked).
    #[error("the ingest writer stopped before committing the message")]
    Stopped,
}

/// How the writer batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterConfig {
    /// Most messages in one transaction.
    pub max_batch: usize,
    /// Most transactions in flight at once.
    pub transactions: usize,
    /// `grouping.window_secs`; `None`: every alert is its own incident.
    pub group_window: Option<std::time::Duration>,
}

/// The handle requests record through. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Writer {
    jobs: mpsc::Sender<Job>,
}

#[derive(Debug)]
struct Job {
    message: Incoming,
    done: oneshot::Sender<Result<Recorded, WriteError>>,
}

impl Writer {
    /// Starts the dispatcher on the current runtime.
    pub fn spawn(pool: PgPool, bot_user_id: String, config: WriterConfig) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE);
        tokio::spawn(dispatch(
            queue,
            Arc::new(Batcher {
                pool,
                rules: Rules {
                    bot_user_id,
                    group_window: config.group_window,
                },
            }),
            config,
        ));
        Self { jobs }
    }

    /// Records `message`; returns once the transaction holding it has committed (or failed).
    pub async fn record(&self, message: Incoming) -> Result<Recorded, WriteError> {
        let (done, answer) = oneshot::channel();
        self.jobs
            .send(Job { message, done })
            .await
            .map_err(|_| WriteError::Stopped)?;
        answer.await.unwrap_or(Err(WriteError::Stopped))
    }
}

#[derive(Debug)]
struct Batcher {
    pool: PgPool,
    rules: Rules,
}

async fn dispatch(mut queue: mpsc::Receiver<Job>, batcher: Arc<Batcher>, config: WriterConfig) {
    let in_flight = Arc::new(Semaphore::new(config.transactions.max(1)));
    let max_batch = config.max_batch.max(1);
    loop {
        // Take the permit first: while every transaction is busy, messages keep queueing and
        // the next batch picks them all up.
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = queue.recv().await else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let batcher = batcher.clone();
        let span = tracing::debug_span!("ingest_batch", size = batch.len());
        tokio::spawn(
            async move {
                batcher.commit(batch).await;
                drop(permit);
            }
            .instrument(span),
        );
    }
}

impl Batcher {
    async fn commit(&self, batch: Vec<Job>) {
        metrics::histogram!(names::INGEST_BATCH_SIZE).record(batch.len() as f64);
        let messages: Vec<&Incoming> = batch.iter().map(|job| &job.message).collect();
        match record_batch(&self.pool, &messages, &self.rules).await {
            Ok(recorded) => {
                for (job, recorded) in batch.into_iter().zip(recorded) {
                    let _ = job.done.send(Ok(recorded));
                }
            }
            Err(e @ sqlx::Error::Database(_)) if batch.len() > 1 => {
                tracing::warn!(error = %e, size = batch.len(), "batch rejected; recording its messages one by one");
                metrics::counter!(names::INGEST_BATCH_SPLITS).increment(1);
                for job in batch {
                    let recorded = record(&self.pool, &job.message, &self.rules)
                        .await
                        .map_err(|e| WriteError::Database(Arc::new(e)));
                    let _ = job.done.send(recorded);
                }
            }
            Err(e) => {
                let e = Arc::new(e);
                for job in batch {
                    let _ = job.done.send(Err(WriteError::Database(e.clone())));
                }
            }
        }
    }
}
