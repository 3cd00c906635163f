//! What the long-running subcommands (`bot`, `worker`, `dev`) share around their work: the stop
//! request they run until (SIGTERM or Ctrl-C), and, for `bot` and `worker`, the pending
//! migrations applied before they start.

use firstline_config::Settings;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// SIGTERM and SIGINT, installed up front so a signal during start-up is not lost.
pub struct StopSignals {
    terminate: Signal,
    interrupt: Signal,
}

impl StopSignals {
    /// Installs the handlers.
    pub fn install() -> std::io::Result<Self> {
        Ok(Self {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    /// Resolves at the next SIGTERM or SIGINT.
    pub async fn requested(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}

/// Brings `database.url` to the current schema.
pub async fn apply_migrations(settings: &Settings) -> anyhow::Result<()> {
    let pool = firstline_store::connect(&settings.database).await?;
    firstline_store::migrate(&pool, &settings.database.url).await?;
    pool.close().await;
    Ok(())
}
