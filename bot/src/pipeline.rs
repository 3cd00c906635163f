//! The path every event takes after transport (Events API or Socket Mode): classify → record
//! through the group-commit [`Writer`] (bounded by `bot.ingest_timeout_ms`) → tell the caller
//! whether it may ack.
//! A ✅ `reaction_added` is the one non-message event processed: it may resolve a thread, in its
//! own bounded transaction, before the ack ([`crate::resolution`]). Side effects that are not
//! part of the record (the 👀 reaction) run after commit, off the ack path.

use crate::classify::{Classifier, Skip};
use crate::ingest::Recorded;
use crate::ingest::writer::{WriteError, Writer, WriterConfig};
use crate::message::Kind;
use crate::metrics as names;
use crate::reactions::ReactTo;
use crate::resolution;
use firstline_model::reactions::{CHECK_MARK, EYES};
use serde_json::Value;
use sqlx::PgPool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The result of handling one event; every variant is acked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Stored (with outbox rows).
    Stored {
        /// `messages.id`.
        message_id: i64,
        /// Its kind.
        kind: Kind,
        /// The thread it resolved (`threads.id`), if any.
        resolved: Option<i64>,
    },
    /// A ✅ on a thread's alert resolved the thread.
    Resolved {
        /// `threads.id`.
        thread_id: i64,
    },
    /// Already stored: a redelivery, or the second event of one mention.
    Duplicate,
    /// Not a message (reaction, unknown event type, …): acknowledged, not stored.
    Ignored(String),
}

/// Why an event could not be recorded. Slack must not get a 2xx: it will retry.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The database failed or is unreachable.
    #[error("recording the message failed: {0}")]
    Database(#[from] sqlx::Error),
    /// The message's batch failed, or the writer stopped.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The transaction did not finish within the ingest deadline.
    #[error("recording the message took longer than {0:?}")]
    Timeout(Duration),
}

/// Shared by the HTTP endpoint and the Socket Mode listener.
#[derive(Debug, Clone)]
pub struct Pipeline {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: PgPool,
    writer: Writer,
    classifier: Classifier,
    timeout: Duration,
    reactions: Option<mpsc::Sender<ReactTo>>,
}

impl Pipeline {
    /// A pipeline writing to `pool` in batches as `batching` says (starts the writer on the
    /// current runtime). `reactions`, when given, receives every new mention.
    pub fn new(
        pool: PgPool,
        classifier: Classifier,
        timeout: Duration,
        batching: WriterConfig,
        reactions: Option<mpsc::Sender<ReactTo>>,
    ) -> Self {
        let writer = Writer::spawn(pool.clone(), classifier.bot_user_id().to_string(), batching);
        Self {
            inner: Arc::new(Inner {
                pool,
                writer,
                classifier,
                timeout,
                reactions,
            }),
        }
    }

    /// Handles one push payload. `Ok` means committed (or nothing to commit): ack it.
    #[tracing::instrument(level = "debug", skip_all, fields(event_id, kind))]
    pub async fn handle(&self, payload: &Value) -> Result<Handled, IngestError> {
        let started = Instant::now();
        if let Some(check_mark) = resolution::check_mark_of(payload) {
            return self.handle_check_mark(&check_mark).await;
        }
        let message = match self.inner.classifier.classify(payload) {
            Ok(message) => message,
            Err(skip) => {
                let reason = match skip {
                    Skip::NotACallback(t) => format!("payload type `{t}`"),
                    Skip::NotAMessage(t) => format!("event type `{t}`"),
                    Skip::Incomplete(field) => format!("message without {field}"),
                };
                metrics::counter!(names::EVENTS, "outcome" => "ignored").increment(1);
                tracing::debug!(%reason, "event acknowledged, not recorded");
                return Ok(Handled::Ignored(reason));
            }
        };
        // Before anything keeps it: Postgres, the Kafka record, the Temporal signal.
        let (message, redactions) = message.redacted();
        if redactions > 0 {
            metrics::counter!(names::REDACTIONS).increment(redactions as u64);
            tracing::info!(
                redactions,
                "secrets removed from a message before it was stored"
            );
        }
        let span = tracing::Span::current();
        span.record("event_id", message.event_id.as_deref().unwrap_or(""));
        span.record("kind", message.kind.as_str());
        let kind = message.kind;
        let mention_at = (kind == Kind::Mention)
            .then(|| (message.thread.channel_id.clone(), message.ts.clone()));
        let recorded =
            match tokio::time::timeout(self.inner.timeout, self.inner.writer.record(message)).await
            {
                Ok(Ok(recorded)) => recorded,
                Ok(Err(e)) => {
                    metrics::counter!(names::EVENTS, "outcome" => "error").increment(1);
                    return Err(e.into());
                }
                Err(_) => {
                    metrics::counter!(names::EVENTS, "outcome" => "error").increment(1);
                    return Err(IngestError::Timeout(self.inner.timeout));
                }
            };
        metrics::histogram!(names::INGEST_SECONDS).record(started.elapsed().as_secs_f64());
        match recorded {
            Recorded::Duplicate => {
                metrics::counter!(names::EVENTS, "outcome" => "duplicate").increment(1);
                Ok(Handled::Duplicate)
            }
            Recorded::Stored {
                message_id,
                resolved,
                ..
            } => {
                metrics::counter!(names::EVENTS, "outcome" => "stored", "kind" => kind.as_str())
                    .increment(1);
                if let (Some((channel, ts)), Some(queue)) = (mention_at, &self.inner.reactions) {
                    // A person's `resolved` is confirmed with ✅: their word closed the thread.
                    let reaction = match resolved {
                        Some(_) => CHECK_MARK,
                        None => EYES,
                    };
                    // Full queue: skip the reaction rather than slow the ack.
                    let _ = queue.try_send(ReactTo {
                        channel,
                        ts,
                        reaction,
                    });
                }
                Ok(Handled::Stored {
                    message_id,
                    kind,
                    resolved,
                })
            }
        }
    }

    /// A ✅ reaction: resolve the thread of the alert it is on, if a person added it.
    async fn handle_check_mark(
        &self,
        check_mark: &resolution::CheckMark,
    ) -> Result<Handled, IngestError> {
        let resolved = tokio::time::timeout(
            self.inner.timeout,
            resolution::resolve_by_check_mark(
                &self.inner.pool,
                check_mark,
                self.inner.classifier.bot_user_id(),
            ),
        )
        .await;
        match resolved {
            Ok(Ok(Some(r))) => {
                metrics::counter!(names::EVENTS, "outcome" => "resolved").increment(1);
                Ok(Handled::Resolved {
                    thread_id: r.thread_id,
                })
            }
            Ok(Ok(None)) => {
                metrics::counter!(names::EVENTS, "outcome" => "ignored").increment(1);
                Ok(Handled::Ignored(
                    "✅ that resolves no open thread (not on an alert, already resolved, or by a bot)"
                        .into(),
                ))
            }
            Ok(Err(e)) => {
                metrics::counter!(names::EVENTS, "outcome" => "error").increment(1);
                Err(e.into())
            }
            Err(_) => {
                metrics::counter!(names::EVENTS, "outcome" => "error").increment(1);
                Err(IngestError::Timeout(self.inner.timeout))
            }
        }
    }
}
