//! The round worker: polls `temporal.task_queue` (`incident-analysis`) and runs the round workflow
//! (`firstline-workflows`) and its activities (`firstline-activities`), with `/healthz` and
//! `/metrics` on `worker.listen`.
//!
//! Shutdown is explicit: when `cancel` fires the worker stops polling, gives in-flight
//! activities `worker.shutdown_grace_secs` to finish, then cancels them so Temporal hands them to
//! another worker (a cancelled `run_graph` resumes there from its last stored checkpoint).
//!
//! The SDK's worker future is not `Send`: [`start_worker`] returns a handle whose
//! [`WorkerHandle::run`] is awaited on the caller's task (the binary's main thread).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use firstline_activities::action::ActionDeps;
use firstline_activities::{Activities, Deps, round_policy};
use firstline_config::Settings;
use firstline_investigation::GraphOptions;
use firstline_investigation::model_path::ModelPath;
use firstline_investigation::tools::McpTools;
use firstline_model::faults;
use firstline_slack::SlackApi;
use firstline_workflows::IncidentRound;
use futures::FutureExt;
use temporalio_sdk::runtime::worker_tuner::{FixedSizeSlotSupplier, TunerHolder};
use temporalio_sdk::{Runtime, Worker, WorkerOptions};
use tokio_util::sync::CancellationToken;

/// Deadline for connecting to Temporal at start-up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Deadline of each Slack Web API call.
const SLACK_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the worker could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Store(#[from] firstline_store::StoreError),
    #[error("MCP tools: {0}")]
    Tools(String),
    #[error("llm: {0}")]
    Model(#[from] firstline_llm::LlmError),
    #[error(transparent)]
    Temporal(#[from] firstline_temporal::ConnectError),
    #[error("worker.listen {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("temporal worker: {0}")]
    Worker(String),
    #[error("{0:#}")]
    Embedding(anyhow::Error),
}

/// A started worker: connected, registered, serving `/healthz`; call [`WorkerHandle::run`].
pub struct WorkerHandle {
    worker: Worker,
    cancel: CancellationToken,
    healthy: Arc<AtomicBool>,
    /// Where `/healthz` and `/metrics` listen.
    pub http_addr: SocketAddr,
    tools: McpTools,
    pool: sqlx::PgPool,
    _runtime: Runtime,
}

/// Connects to Postgres and Temporal and registers the workflow and activities.
pub async fn start_worker(
    settings: &Settings,
    embedder: Arc<dyn firstline_embed::Embedder>,
    cancel: CancellationToken,
) -> Result<WorkerHandle, WorkerError> {
    let pool = firstline_store::connect(&settings.database).await?;
    let tools = McpTools::from_settings(&settings.mcp, Some(pool.clone()))
        .map_err(|e| WorkerError::Tools(e.to_string()))?
        .with_actor(format!("firstline-worker@{}", std::process::id()))
        .with_after_call(Arc::new(|| faults::pause(faults::TOOL_AFTER_CALL).boxed()));
    let slack = Arc::new(SlackApi::new(
        &settings.slack.api_url,
        &settings.slack.bot_token,
        SLACK_TIMEOUT,
    ));
    let model = ModelPath::from_settings(&settings.llm)?;
    // The recorder first: the activities hold their in-flight gauge from construction on.
    let _ = crate::telemetry::metrics();
    crate::embedding::check(&pool, embedder.as_ref())
        .await
        .map_err(WorkerError::Embedding)?;
    let actions = match firstline_activities::action::Writer::from_settings(
        &settings.actions,
        &settings.mcp,
        Some(pool.clone()),
    ) {
        Ok(Some(writer)) if settings.actions.enabled => Some(ActionDeps {
            settings: settings.actions.clone(),
            writer,
        }),
        Ok(_) => None,
        Err(e) => return Err(WorkerError::Tools(format!("actions.server: {e}"))),
    };
    let activities = Activities::new(Deps {
        pool: pool.clone(),
        tools: tools.clone(),
        slack,
        graph: GraphOptions::from_settings(&settings.round),
        model,
        embedder: Some(embedder),
        policy: round_policy(
            &settings.round,
            &settings.llm,
            &settings.actions,
            &settings.grouping,
        ),
        context_chars: settings.round.context_chars,
        task_queue: settings.temporal.task_queue.clone(),
        actions,
        group_window: settings.grouping.window(),
    });

    let client = firstline_temporal::connect(
        &settings.temporal,
        format!("firstline-worker@{}", std::process::id()),
        CONNECT_TIMEOUT,
    )
    .await?;
    let runtime = Runtime::from_current_tokio(Default::default())
        .map_err(|e| WorkerError::Worker(e.to_string()))?;
    let tuner = TunerHolder::builder()
        .workflow_task_slot_supplier(FixedSizeSlotSupplier::new(
            settings.worker.max_concurrent_workflow_tasks,
        ))
        .activity_task_slot_supplier(FixedSizeSlotSupplier::new(
            settings.worker.max_concurrent_activities,
        ))
        .local_activity_task_slot_supplier(FixedSizeSlotSupplier::new(1))
        .nexus_task_slot_supplier(FixedSizeSlotSupplier::new(1))
        .build();
    let options = WorkerOptions::new(settings.temporal.task_queue.clone())
        .register_workflow::<IncidentRound>()
        .map_err(|e| WorkerError::Worker(e.to_string()))?
        .register_activities(activities)
        .tuner(tuner)
        .graceful_shutdown_period(Duration::from_secs(settings.worker.shutdown_grace_secs))
        .sticky_queue_schedule_to_start_timeout(Duration::from_secs(
            settings.worker.sticky_timeout_secs,
        ))
        .max_heartbeat_throttle_interval(heartbeat_throttle(
            settings
                .round
                .run_graph_heartbeat_secs
                .min(settings.llm.heartbeat_secs),
        ))
        .build();
    let worker =
        Worker::new(&runtime, client, options).map_err(|e| WorkerError::Worker(e.to_string()))?;

    let healthy = Arc::new(AtomicBool::new(false));
    let http_addr = crate::health::serve(
        &settings.worker.listen,
        Arc::clone(&healthy),
        "not polling",
        cancel.clone(),
    )
    .await
    .map_err(|source| WorkerError::Listen {
        addr: settings.worker.listen.clone(),
        source,
    })?;
    Ok(WorkerHandle {
        worker,
        cancel,
        healthy,
        http_addr,
        tools,
        pool,
        _runtime: runtime,
    })
}

impl WorkerHandle {
    /// Runs until the cancellation token fires, then shuts down gracefully.
    pub async fn run(mut self) -> Result<(), WorkerError> {
        let shutdown = self.worker.shutdown_handle();
        let cancel = self.cancel.clone();
        let healthy = Arc::clone(&self.healthy);
        healthy.store(true, Ordering::SeqCst);
        tracing::info!(queue = %self.worker.task_queue(), "worker polling");
        let watcher = async move {
            cancel.cancelled().await;
            healthy.store(false, Ordering::SeqCst);
            tracing::info!("worker shutting down: finishing in-flight tasks");
            shutdown();
        };
        let (result, ()) = futures::join!(self.worker.run(), watcher);
        self.healthy.store(false, Ordering::SeqCst);
        self.tools.shutdown().await;
        self.pool.close().await;
        result.map_err(|e| WorkerError::Worker(e.to_string()))
    }
}

/// How often at most the SDK sends `run_graph`'s heartbeats. Its default, 0.8 × the heartbeat
/// timeout, leaves a busy worker a fifth of the timeout before the server gives the attempt up
/// as lost; a third of it keeps two heartbeats in every timeout window.
fn heartbeat_throttle(heartbeat_timeout_secs: u64) -> Duration {
    (Duration::from_secs(heartbeat_timeout_secs) / 3).max(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::heartbeat_throttle;
    use std::time::Duration;

    #[test]
    fn heartbeats_go_out_at_least_every_third_of_the_timeout_but_not_more_than_once_a_second() {
        assert_eq!(heartbeat_throttle(30), Duration::from_secs(10));
        assert_eq!(heartbeat_throttle(5), Duration::from_secs(5) / 3);
        assert_eq!(heartbeat_throttle(2), Duration::from_secs(1));
    }
}
