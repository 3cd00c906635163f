//! What the long-running subcommands (`bot`, `worker`, `dev`) share around their work: the stop
//! request they run until (SIGTERM or Ctrl-C), and, for `bot` and `worker`, the start of a
//! service process: fault injection read from `FAILPOINTS`, and pending migrations applied.

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

/// A `bot` or `worker` process, ready to start its work.
pub struct Service {
    /// `FAILPOINTS`, read once (the crash tests pause processes there); inert when unset.
    _faults: fail::FailScenario<'static>,
    /// Resolves when the process is asked to stop.
    pub stop: StopSignals,
}

impl Service {
    /// Reads `FAILPOINTS`, installs the stop signals (before anything slow, so a signal during
    /// start-up is not lost) and applies pending migrations.
    pub async fn prepare(settings: &Settings) -> anyhow::Result<Self> {
        let faults = fail::FailScenario::setup();
        let stop = StopSignals::install()?;
        apply_migrations(settings).await?;
        Ok(Self {
            _faults: faults,
            stop,
        })
    }
}

impl Service {
    /// Runs `work` until it ends or a stop is requested; on a stop, cancels `cancel` and waits
    /// for `work` to wind down (its own grace bounds that wait).
    pub async fn run_until_stopped<E>(
        &mut self,
        work: impl Future<Output = Result<(), E>>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<(), E> {
        tokio::pin!(work);
        tokio::select! {
            result = &mut work => return result,
            _ = self.stop.requested() => {}
        }
        eprintln!("stopping…");
        cancel.cancel();
        work.await
    }
}

/// Brings `database.url` to the current schema.
async fn apply_migrations(settings: &Settings) -> anyhow::Result<()> {
    let pool = firstline_store::connect(&settings.database).await?;
    firstline_store::migrate(&pool, &settings.database.url).await?;
    pool.close().await;
    Ok(())
}
