//! `firstline dev`: the whole system on one machine, no accounts needed.
//!
//! Starts the embedded stack (PostgreSQL+pgvector, Temporal dev server, Kafka broker), creates and
//! migrates the `firstline` database, writes the addresses to `<state_dir>/env` (shell syntax, so
//! `. .firstline/env` points other commands at this stack), prints one line per service, then
//! waits. Ctrl-C or SIGTERM stops every child; a service dying on its own stops the rest and
//! exits non-zero. The bot runs in this process (with the Slack stand-in when no bot token is
//! configured; `--no-bot` runs the stack alone); the worker and embedder join as their issues land.

use firstline_config::{DatabaseSettings, Settings};
use firstline_stack::{Addresses, Stack, StackConfig};
use std::process::ExitCode;
use std::time::Duration;
use tokio::signal::unix::{SignalKind, signal};

/// The database the components use.
const DATABASE: &str = "firstline";
/// How long each service gets to stop before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run only the stack (PostgreSQL, Temporal, Kafka): no bot, no Slack stand-in.
    #[arg(long)]
    no_bot: bool,
}

pub async fn run(settings: Settings, args: Args) -> anyhow::Result<ExitCode> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let config = StackConfig::from_settings(&settings.dev);
    let state_dir = config.state_dir.clone();
    let mut stack = tokio::select! {
        started = Stack::start(config) => started?,
        _ = terminate.recv() => return Ok(ExitCode::SUCCESS),
        _ = interrupt.recv() => return Ok(ExitCode::SUCCESS),
    };
    let addresses = stack.addresses().clone();
    if let Err(e) = prepare_database(&settings.database, &addresses).await {
        stack.stop(STOP_GRACE).await;
        return Err(e);
    }
    let bot = if args.no_bot {
        None
    } else {
        match crate::bot::start_for_dev(&settings, &addresses, DATABASE).await {
            Ok(bot) => Some(bot),
            Err(e) => {
                stack.stop(STOP_GRACE).await;
                return Err(e);
            }
        }
    };
    let env_file = state_dir.join("env");
    std::fs::write(&env_file, env_lines(&addresses))?;
    for line in bot.iter().flat_map(|b| b.lines.iter()) {
        println!("{line}");
    }
    print_ready(&addresses, &stack, &env_file);

    let outcome = tokio::select! {
        _ = terminate.recv() => Ok(ExitCode::SUCCESS),
        _ = interrupt.recv() => Ok(ExitCode::SUCCESS),
        (service, status) = stack.exited() => Err(anyhow::anyhow!(
            "{service} exited unexpectedly ({}); stopped the rest (logs in {})",
            status.map_or_else(|e| e.to_string(), |s| s.to_string()),
            state_dir.join("logs").display()
        )),
    };
    eprintln!("stopping…");
    if let Some(bot) = bot {
        bot.stop().await;
    }
    stack.stop(STOP_GRACE).await;
    let _ = std::fs::remove_file(&env_file);
    outcome
}

async fn prepare_database(
    settings: &DatabaseSettings,
    addresses: &Addresses,
) -> anyhow::Result<()> {
    let timeout = Duration::from_secs(settings.connect_timeout_secs);
    firstline_store::ensure_database(&addresses.database_url("postgres"), DATABASE, None, timeout)
        .await?;
    let database = DatabaseSettings {
        url: addresses.database_url(DATABASE),
        ..settings.clone()
    };
    let pool = firstline_store::connect(&database).await?;
    firstline_store::migrate(&pool, &database.url).await?;
    pool.close().await;
    Ok(())
}

/// The settings other processes need to use this stack, as `FIRSTLINE_*` assignments.
fn env_lines(addresses: &Addresses) -> String {
    format!(
        "FIRSTLINE_DATABASE__URL={}\nFIRSTLINE_TEMPORAL__ADDRESS={}\nFIRSTLINE_KAFKA__BROKERS={}\n",
        addresses.database_url(DATABASE).expose(),
        addresses.temporal_address(),
        addresses.kafka_brokers(),
    )
}

fn print_ready(addresses: &Addresses, stack: &Stack, env_file: &std::path::Path) {
    let pid = |name: &str| {
        stack
            .pids()
            .into_iter()
            .find(|(service, _)| *service == name)
            .map_or(0, |(_, pid)| pid)
    };
    println!(
        "postgres  {}  (PostgreSQL 18 + pgvector, pid {})",
        addresses.database_url(DATABASE),
        pid("postgres")
    );
    println!(
        "temporal  {}  (namespace default, pid {})",
        addresses.temporal_address(),
        pid("temporal")
    );
    println!(
        "kafka     {}  (pid {})",
        addresses.kafka_brokers(),
        pid("kafka")
    );
    println!("env       {}", env_file.display());
    println!("firstline dev is ready; Ctrl-C stops everything");
}
