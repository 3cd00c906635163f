//! The `wake` sink: signal-with-start of the thread's `incident_round` workflow, through the
//! workflow's own typed definition (ARCHITECTURE.md, invariant 4): id
//! `incident-<team>-<channel>-<thread_ts>`, task queue `temporal.task_queue`,
//! input `Trigger { thread }`, signal `mention { user, text, ts }`, id reuse ALLOW_DUPLICATE, so a
//! mention signals an open run and starts a fresh run after the last one closed. The signal is
//! sent in the trace of the request that recorded the message (`crate::trace`).
//!
//! The client connects lazily and reconnects after failures, so the bot starts (and keeps
//! acking Slack) while Temporal is down; wake-ups wait in the outbox.

use super::Sink;
use super::outbox::{OutboxKind, OutboxRow};
use firstline_config::TemporalSettings;
use firstline_model::{Trigger, WakeRecord};
use firstline_workflows::IncidentRound;
use opentelemetry::context::FutureExt as _;
use std::time::Duration;
use temporalio_client::{Client, WorkflowIdReusePolicy, WorkflowStartOptions};
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
            let result = match serde_json::from_value::<WakeRecord>(row.payload.clone()) {
                Ok(wake) => self.wake(&client, wake).await,
                Err(e) => Err(format!("outbox row {} is not a wake record: {e}", row.id)),
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
