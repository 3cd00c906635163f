//! `firstline worker`: the round worker process. Applies pending migrations, then polls the task
//! queue until SIGTERM or Ctrl-C, and shuts down gracefully: in-flight activities get
//! `worker.shutdown_grace_secs` to finish before they are handed back. `FAILPOINTS` (fault
//! injection for the crash tests) is read once here. [`host`] assembles the worker itself.

mod host;

pub use host::start_worker;

use crate::service::Service;
use firstline_config::Settings;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn run(settings: Settings, _args: Args) -> anyhow::Result<ExitCode> {
    let mut service = Service::prepare(&settings).await?;
    let cancel = CancellationToken::new();
    let embedder = crate::embedding::load(&settings, None).await?;
    let worker = start_worker(&settings, embedder, cancel.clone()).await?;
    println!("worker    http://{}/healthz", worker.http_addr);
    println!("worker    task queue {}", settings.temporal.task_queue);
    service.run_until_stopped(worker.run(), &cancel).await?;
    Ok(ExitCode::SUCCESS)
}
