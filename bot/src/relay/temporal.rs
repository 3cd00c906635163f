//! The `wake` sink: signal-with-start of the thread's `incident_round` workflow, through the
//! workflow's own typed definition (ARCHITECTURE.md, invariant 4): id
//! `incident-<team>-<channel>-<thread_ts>`, task queue `temporal.task_queue`,
//! input `Trigger { thread }`, signal `mention { user, text, ts }`, id reuse ALLOW_DUPLICATE, so a
//! mention signals an open run and starts a fresh run after the last one closed. The signal is
//! sent in the trace of the request that recorded the message (`crate::trace`).
//!
//! A row holding a [`DecisionWake`] (it has a `decision` key: Approve / Reject recorded on a
//! proposed action) is a plain signal `decision` to the thread's workflow id, never a start: a
//! decision only wakes a round that waits for it. When no run is open (never started, or
//! closed), the row is delivered all the same: nothing waits for it, and the `actions` row stays
//! the truth. The signal carries a request id per action and decision, so a repeated delivery is
//! one signal to the server, and it is sent in the click's trace.
//!
//! The client connects lazily and reconnects after failures, so the bot starts (and keeps
//! acking Slack) while Temporal is down; wake-ups wait in the outbox.

use super::Sink;
use super::outbox::{OutboxKind, OutboxRow};
use firstline_config::TemporalSettings;
use firstline_model::{DecisionWake, Trigger, WakeRecord};
use firstline_workflows::IncidentRound;
use opentelemetry::context::FutureExt as _;
use std::time::Duration;
use temporalio_client::errors::WorkflowInteractionError;
use temporalio_client::{
    Client, WorkflowIdReusePolicy, WorkflowSignalOptions, WorkflowStartOptions,
};
use tokio::sync::Mutex;

/// Where and how to reach Temporal.
#[derive(Debug, Clone)]
pub struct TemporalTarget {
    /// Address, namespace, task queue and credentials (`[temporal]`).
    pub settings: TemporalSettings,
    /// Deadline of each call (and of connecting).
    pub timeout: Duration,
}

/// Delivers `wake` rows.
pub struct TemporalSink {
    target: TemporalTarget,
    client: Mutex<Option<Client>>,
}

impl TemporalSink {
    /// A sink that connects on first use.
    pub fn new(target: TemporalTarget) -> Self {
        Self {
            target,
            client: Mutex::new(None),
        }
    }

    async fn client(&self) -> Result<Client, String> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            return Ok(client.clone());
        }
        let client = firstline_temporal::connect(
            &self.target.settings,
            format!("firstline-bot@{}", std::process::id()),
            self.target.timeout,
        )
        .await
        .map_err(|e| e.to_string())?;
        *slot = Some(client.clone());
        Ok(client)
    }

    async fn wake(&self, client: &Client, wake: WakeRecord) -> Result<(), String> {
        let options = WorkflowStartOptions::new(
            self.target.settings.task_queue.clone(),
            wake.thread.workflow_id(),
        )
        .id_reuse_policy(WorkflowIdReusePolicy::AllowDuplicate)
        .build();
        // In the trace of the request that recorded the message: the client's tracing plugin
        // puts it in the signal's header, and the round's activities run in it.
        let call = client
            .signal_with_start_workflow(
                IncidentRound::run,
                Trigger {
                    thread: wake.thread.clone(),
                },
                IncidentRound::mention,
                wake.mention,
                options,
            )
            .with_context(crate::trace::context_of(wake.traceparent.as_deref()));
        match tokio::time::timeout(self.target.timeout, call).await {
            Ok(Ok(handle)) => {
                tracing::debug!(workflow_id = %wake.thread.workflow_id(), run_id = ?handle.run_id(), "round woken");
                Ok(())
            }
            Ok(Err(e)) => Err(format!("signal-with-start: {e}")),
            Err(_) => Err(format!(
                "signal-with-start: no answer within {:?}",
                self.target.timeout
            )),
        }
    }

    /// Signals a recorded decision to the thread's open run, if there is one.
    async fn decide(&self, client: &Client, wake: DecisionWake) -> Result<(), String> {
        let workflow_id = wake.thread.workflow_id();
        let handle = client.get_workflow_handle::<IncidentRound>(workflow_id.clone());
        let options = WorkflowSignalOptions::builder()
            .request_id(format!(
                "decision-{}-{}",
                wake.decision.action_id,
                wake.decision.decision.as_str()
            ))
            .build();
        let action_id = wake.decision.action_id;
        // In the trace of the click that recorded the decision, as a mention's wake-up is.
        let call = handle
            .signal(IncidentRound::decision, wake.decision, options)
            .with_context(crate::trace::context_of(wake.traceparent.as_deref()));
        match tokio::time::timeout(self.target.timeout, call).await {
            Ok(Ok(())) => {
                tracing::debug!(%workflow_id, action_id, "decision signalled");
                Ok(())
            }
            Ok(Err(WorkflowInteractionError::NotFound(status))) => {
                tracing::info!(
                    %workflow_id,
                    action_id,
                    reason = %firstline_model::text::prefix(status.message(), 200),
                    "no open round for a decision; nothing waits for it (the actions row keeps it)"
                );
                Ok(())
            }
            Ok(Err(e)) => Err(format!("signal decision: {e}")),
            Err(_) => Err(format!(
                "signal decision: no answer within {:?}",
                self.target.timeout
            )),
        }
    }
}

/// What a `wake` row holds.
enum Wake {
    /// A message that wakes (or starts) the thread's round.
    Mention(WakeRecord),
    /// A decision on a proposed action, for the round that waits for it.
    Decision(DecisionWake),
}

impl Wake {
    fn of(row: &OutboxRow) -> Result<Self, String> {
        if row.payload.get("decision").is_some() {
            serde_json::from_value(row.payload.clone())
                .map(Wake::Decision)
                .map_err(|e| format!("outbox row {} is not a decision wake: {e}", row.id))
        } else {
            serde_json::from_value(row.payload.clone())
                .map(Wake::Mention)
                .map_err(|e| format!("outbox row {} is not a wake record: {e}", row.id))
        }
    }
}

impl Sink for TemporalSink {
    fn kind(&self) -> OutboxKind {
        OutboxKind::Wake
    }

    async fn deliver(&self, rows: &[OutboxRow]) -> Vec<Result<(), String>> {
        let client = match self.client().await {
            Ok(client) => client,
            Err(e) => return rows.iter().map(|_| Err(e.clone())).collect(),
        };
        let mut results = Vec::with_capacity(rows.len());
        let mut failed = false;
        for row in rows {
            // Once the server fails, don't hammer it with the rest of the batch.
            if failed {
                results.push(Err("skipped after an earlier failure in this batch".into()));
                continue;
            }
            let result = match Wake::of(row) {
                Ok(Wake::Mention(wake)) => self.wake(&client, wake).await,
                Ok(Wake::Decision(wake)) => self.decide(&client, wake).await,
                Err(e) => Err(e),
            };
            failed = result.is_err();
            results.push(result);
        }
        if failed {
            // The connection may be dead; build a new one next time.
            *self.client.lock().await = None;
        }
        results
    }
}
