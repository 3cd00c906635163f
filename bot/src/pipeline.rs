//! The path every event takes after transport (Events API or Socket Mode): classify → record
//! through the group-commit [`Writer`] (bounded by `bot.ingest_timeout_ms`) → tell the caller
//! whether it may ack.
//! A ✅ `reaction_added` is the one non-message event processed: it may resolve a thread, in its
//! own bounded transaction, before the ack ([`crate::resolution`]). Side effects that are not
//! part of the record (the 👀 reaction) run after commit, off the ack path.
//! Approve / Reject on a proposed action is decided by [`crate::approval`] within the same
//! deadline; who decided, or why nothing was, is shown after the ack.

use crate::approval::{self, Approvals, Outcome};
use crate::classify::{Classifier, Skip};
use crate::command;
use crate::ingest::Recorded;
use crate::ingest::writer::{WriteError, Writer, WriterConfig};
use crate::interaction::{self, DecisionClick, FeedbackClick, Interaction, RightCause};
use crate::message::{Incoming, Kind};
use crate::metrics as names;
use crate::reactions::{ReactTo, Touch};
use crate::resolution;
use firstline_model::reactions::{CHECK_MARK, EYES};
use firstline_model::{Decision, ThreadKey, Verdict};
use firstline_slack::SlackApi;
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
    /// A person's verdict on a round's reply, stored (`changed`: it was new or different).
    Feedback { round_id: i64, changed: bool },
    /// A person's decision on a proposed action, recorded (the first and only one).
    Decided { action_id: i64, decision: Decision },
    /// Not a message (reaction, unknown event type, …): acknowledged, not stored.
    Ignored(String),
}

/// Why a `/firstline investigate` could not start.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("posting the thread's first message failed: {0}")]
    Slack(#[from] firstline_slack::SlackApiError),
    #[error(transparent)]
    Ingest(#[from] IngestError),
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
    touches: Option<Touches>,
    approvals: Approvals,
}

/// Where the pipeline queues what it does to Slack after a commit, and the Web API it posts a
/// `/firstline investigate` thread with.
#[derive(Debug, Clone)]
pub struct Touches {
    pub api: Arc<SlackApi>,
    pub queue: mpsc::Sender<Touch>,
    /// React 👀 to recorded mentions and firing alerts (`bot.ack_reaction`).
    pub react: bool,
}

impl Pipeline {
    /// A pipeline writing to `pool` in batches as `batching` says (starts the writer on the
    /// current runtime). `touches`, when given, receives every new mention's reaction (when
    /// they react), every answered question's and decided action's edit, and every refused
    /// decision's explanation. `approvals` decides Approve / Reject clicks.
    pub fn new(
        pool: PgPool,
        classifier: Classifier,
        timeout: Duration,
        batching: WriterConfig,
        touches: Option<Touches>,
        approvals: Approvals,
    ) -> Self {
        let writer = Writer::spawn(pool.clone(), classifier.bot_user_id().to_string(), batching);
        Self {
            inner: Arc::new(Inner {
                pool,
                writer,
                classifier,
                timeout,
                touches,
                approvals,
            }),
        }
    }

    /// Handles one push payload. `Ok` means committed (or nothing to commit): ack it.
    // At info, so that it exists under the default filter: an alert's trace starts here.
    #[tracing::instrument(name = "ingest", level = "info", skip_all, fields(event_id, kind))]
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
        let span = tracing::Span::current();
        span.record("event_id", message.event_id.as_deref().unwrap_or(""));
        span.record("kind", message.kind.as_str());
        let kind = message.kind;
        // 👀 on every mention and every firing alert at once, whatever queue its round waits
        // in: people see it was seen, a storm's last alert as soon as its first.
        let seen = kind == Kind::Mention
            || (kind == Kind::Alert && !resolution::is_recovery_alert(&message));
        let mention_at = seen.then(|| (message.thread.channel_id.clone(), message.ts.clone()));
        match self.record(message, started).await? {
            Recorded::Duplicate => Ok(Handled::Duplicate),
            Recorded::Stored {
                message_id,
                resolved,
                ..
            } => {
                metrics::counter!(names::EVENTS, "outcome" => "stored", "kind" => kind.as_str())
                    .increment(1);
                let queue = self.inner.touches.as_ref().filter(|t| t.react);
                if let (Some((channel, ts)), Some(touches)) = (mention_at, queue) {
                    // A person's `resolved` is confirmed with ✅: their word closed the thread.
                    let reaction = match resolved {
                        Some(_) => CHECK_MARK,
                        None => EYES,
                    };
                    // Full queue: skip the reaction rather than slow the ack.
                    let _ = touches.queue.try_send(Touch::React(ReactTo {
                        channel,
                        ts,
                        reaction,
                    }));
                }
                Ok(Handled::Stored {
                    message_id,
                    kind,
                    resolved,
                })
            }
        }
    }

    /// Records `message` through the writer within the ingest deadline, its secrets removed
    /// first: before anything keeps it (Postgres, the Kafka record, the Temporal signal).
    async fn record(&self, message: Incoming, started: Instant) -> Result<Recorded, IngestError> {
        let (mut message, redactions) = message.redacted();
        message.traceparent = crate::trace::current_traceparent();
        let kind = message.kind;
        if redactions > 0 {
            metrics::counter!(names::REDACTIONS).increment(redactions as u64);
            tracing::info!(
                redactions,
                "secrets removed from a message before it was stored"
            );
        }
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
            }
            Recorded::Stored {
                message_id,
                wakes: true,
                ..
            } => tracing::info!(
                kind = kind.as_str(),
                message_id,
                "recorded; the thread's round wakes"
            ),
            Recorded::Stored { .. } => {}
        }
        Ok(recorded)
    }

    /// Handles one interaction payload (`block_actions`): a click or typed answer bound to the
    /// round and question it was rendered for is recorded like a message and wakes the round
    /// while the thread awaits an answer; the reply is then edited to show who answered what.
    /// Approve / Reject on a proposed action is decided by [`crate::approval`].
    /// Anything else — another interaction, a click on a stale or forged block, a value the
    /// question did not offer — is acknowledged and changes nothing. `Ok` means: ack it.
    #[tracing::instrument(
        name = "ingest.click",
        level = "info",
        skip_all,
        fields(round, question)
    )]
    pub async fn handle_interaction(&self, payload: &Value) -> Result<Handled, IngestError> {
        let started = Instant::now();
        let refuse = |reason: String| {
            metrics::counter!(names::EVENTS, "outcome" => "refused").increment(1);
            tracing::info!(%reason, "interaction acknowledged, not recorded");
            Ok(Handled::Ignored(reason))
        };
        let click = match interaction::read(payload) {
            Ok(Interaction::Answer(click)) => click,
            Ok(Interaction::Feedback(feedback)) => return self.handle_feedback(&feedback).await,
            Ok(Interaction::RightCause(right)) => return self.handle_right_cause(&right).await,
            Ok(Interaction::Decision(click)) => return self.handle_decision(&click, payload).await,
            Err(e) => return refuse(e.to_string()),
        };
        let span = tracing::Span::current();
        span.record("round", click.block.round);
        span.record("question", click.block.index);
        let question = tokio::time::timeout(
            self.inner.timeout,
            firstline_store::rounds::question_at(
                &self.inner.pool,
                &click.thread,
                click.block.round,
                click.block.index,
                &click.message_ts,
            ),
        )
        .await
        .map_err(|_| IngestError::Timeout(self.inner.timeout))??;
        let Some(question) = question else {
            return refuse(format!(
                "question {} of round {} is not the thread's open question on that message",
                click.block.index + 1,
                click.block.round
            ));
        };
        if !click.block.typed && !question.offers(&click.value) {
            return refuse(format!(
                "`{}` is not a choice question {} of round {} offered",
                firstline_model::text::prefix(&click.value, 80),
                click.block.index + 1,
                click.block.round
            ));
        }
        match self.record(click.incoming(payload), started).await? {
            Recorded::Duplicate => Ok(Handled::Duplicate),
            Recorded::Stored {
                message_id,
                resolved,
                ..
            } => {
                metrics::counter!(names::EVENTS, "outcome" => "stored", "kind" => Kind::Answer.as_str())
                    .increment(1);
                if let (Some(touches), Some(blocks)) =
                    (&self.inner.touches, click.answered_blocks(payload))
                {
                    let _ = touches.queue.try_send(Touch::ShowAnswer {
                        channel: click.thread.channel_id.clone(),
                        ts: click.message_ts.clone(),
                        blocks,
                    });
                }
                Ok(Handled::Stored {
                    message_id,
                    kind: Kind::Answer,
                    resolved,
                })
            }
        }
    }

    /// Approve / Reject: decided at most once ([`Approvals::decide`], within the ingest
    /// deadline, in the click's trace so the round's wake-up continues it). Recorded, the reply
    /// shows who decided in place of the buttons; refused, the clicker alone is told why. Both
    /// after the ack.
    async fn handle_decision(
        &self,
        click: &DecisionClick,
        payload: &Value,
    ) -> Result<Handled, IngestError> {
        let traceparent = crate::trace::current_traceparent();
        let outcome = tokio::time::timeout(
            self.inner.timeout,
            self.inner
                .approvals
                .decide(&self.inner.pool, click, traceparent),
        )
        .await
        .map_err(|_| IngestError::Timeout(self.inner.timeout))??;
        metrics::counter!(names::ACTION_DECISIONS, "outcome" => outcome.label(click.decision))
            .increment(1);
        match outcome {
            Outcome::Recorded(row) => {
                tracing::info!(
                    action_id = click.action_id,
                    decision = click.decision.as_str(),
                    user = %click.user,
                    "decision recorded; the round wakes"
                );
                let line = approval::tell::decided_line(&row);
                if let (Some(touches), Some(blocks)) = (
                    &self.inner.touches,
                    approval::tell::decided_blocks(payload, click.action_id, &line),
                ) {
                    let _ = touches.queue.try_send(Touch::ShowDecision {
                        channel: click.thread.channel_id.clone(),
                        ts: click.message_ts.clone(),
                        text: approval::tell::decided_text(&row),
                        blocks,
                    });
                }
                Ok(Handled::Decided {
                    action_id: click.action_id,
                    decision: click.decision,
                })
            }
            Outcome::Refused(refusal) => {
                let reason = format!(
                    "{} on action {} decided nothing: {}",
                    click.decision.as_str(),
                    click.action_id,
                    refusal.label()
                );
                metrics::counter!(names::EVENTS, "outcome" => "refused").increment(1);
                tracing::info!(user = %click.user, %reason, "interaction acknowledged, not recorded");
                if let Some(touches) = &self.inner.touches {
                    let _ = touches.queue.try_send(Touch::Tell {
                        channel: click.thread.channel_id.clone(),
                        thread_ts: click.thread.thread_ts.clone(),
                        user: click.user.clone(),
                        text: approval::tell::refusal(&refusal, click),
                    });
                }
                Ok(Handled::Ignored(reason))
            }
        }
    }

    /// A click on a reply's feedback buttons: stored once per person per round, on the round
    /// whose reply it was clicked on; a click on any other message changes nothing.
    async fn handle_feedback(&self, click: &FeedbackClick) -> Result<Handled, IngestError> {
        let pool = &self.inner.pool;
        let stored = async {
            let Some(round_id) = firstline_store::rounds::posted_round(
                pool,
                &click.thread,
                click.round,
                &click.message_ts,
            )
            .await?
            else {
                return Ok(None);
            };
            firstline_store::feedback::record(pool, round_id, &click.user, click.verdict)
                .await
                .map(|changed| Some((round_id, changed)))
        };
        let stored = tokio::time::timeout(self.inner.timeout, stored)
            .await
            .map_err(|_| IngestError::Timeout(self.inner.timeout))??;
        match stored {
            Some((round_id, changed)) => {
                if changed {
                    metrics::counter!(names::FEEDBACK, "verdict" => click.verdict.as_str())
                        .increment(1);
                }
                tracing::info!(
                    round_id,
                    verdict = click.verdict.as_str(),
                    changed,
                    "feedback"
                );
                // Newly marked wrong: ask for the right cause (optional), while the click's
                // trigger is valid.
                if let (true, Verdict::Wrong, Some(trigger_id), Some(touches)) = (
                    changed,
                    click.verdict,
                    &click.trigger_id,
                    &self.inner.touches,
                ) {
                    let _ = touches.queue.try_send(Touch::OpenView {
                        trigger_id: trigger_id.clone(),
                        view: interaction::right_cause_view(round_id),
                    });
                }
                Ok(Handled::Feedback { round_id, changed })
            }
            None => {
                metrics::counter!(names::EVENTS, "outcome" => "refused").increment(1);
                Ok(Handled::Ignored(format!(
                    "feedback on round {} of a message that is not its reply",
                    click.round
                )))
            }
        }
    }

    /// The "Wrong cause" dialog, submitted: its text (redacted) is stored on the person's own
    /// "wrong" verdict for that round; from anyone else, nothing.
    async fn handle_right_cause(&self, right: &RightCause) -> Result<Handled, IngestError> {
        let text = firstline_redact::redact(&right.text).text;
        let stored = tokio::time::timeout(
            self.inner.timeout,
            firstline_store::feedback::note(&self.inner.pool, right.round_id, &right.user, &text),
        )
        .await
        .map_err(|_| IngestError::Timeout(self.inner.timeout))??;
        if stored {
            Ok(Handled::Feedback {
                round_id: right.round_id,
                changed: true,
            })
        } else {
            metrics::counter!(names::EVENTS, "outcome" => "refused").increment(1);
            Ok(Handled::Ignored(
                "a right cause from someone who did not mark that round wrong".into(),
            ))
        }
    }

    /// `/firstline …` by `user` in `channel`: help and usage are answered; `investigate` posts
    /// the new thread's first message, records it as that thread's alert (which wakes its round)
    /// and says so. Returns the private reply. `Err` when the request could not be recorded.
    pub async fn handle_command(
        &self,
        thread: ThreadKey,
        user: &str,
        text: &str,
    ) -> Result<String, CommandError> {
        let subject = match command::parse(text) {
            command::Request::Help => return Ok(command::HELP.to_string()),
            command::Request::Usage(typed) => {
                return Ok(format!(
                    "I did not understand `{}`. {}",
                    firstline_model::text::prefix(&typed, 80),
                    command::USAGE
                ));
            }
            command::Request::Investigate(subject) => subject,
        };
        let Some(touches) = &self.inner.touches else {
            return Ok("I cannot post here: no Slack bot token is configured.".to_string());
        };
        let posted = touches
            .api
            .post_message(&firstline_slack::OutgoingMessage {
                channel: thread.channel_id.clone(),
                thread_ts: None,
                text: format!(
                    "🔎 Investigating {} (asked by <@{user}>). I will reply in this thread.",
                    subject.describe()
                ),
                blocks: None,
                metadata: None,
            })
            .await?;
        let alert = Incoming {
            event_id: None,
            thread: ThreadKey {
                thread_ts: posted.clone(),
                ..thread
            },
            ts: posted,
            thread_ts: None,
            kind: Kind::Alert,
            user_id: Some(user.to_string()),
            bot_id: None,
            app_id: None,
            username: None,
            text: subject.alert_text(user),
            raw: serde_json::json!({"command": "/firstline", "user_id": user, "text": text}),
            traceparent: None,
        };
        self.record(alert, Instant::now()).await?;
        metrics::counter!(names::EVENTS, "outcome" => "stored", "kind" => "command").increment(1);
        Ok(format!(
            "Started an investigation of {} in a new thread.",
            subject.describe()
        ))
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
