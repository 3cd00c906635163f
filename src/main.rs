//! `firstline`: the one binary. Each subcommand is a process of the system or an
//! operator's tool; this file only parses the command line, loads settings, starts telemetry and
//! turns errors into one line on stderr and a non-zero exit code.

mod bot;
mod dev;
mod doctor;
mod eval;
mod investigate;
mod migrate;
mod service;
mod telemetry;
mod worker;

use clap::{Parser, Subcommand};
use firstline_config::Settings;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "firstline",
    version,
    about = "Slack incident bot: grounded first-level analysis"
)]
struct Cli {
    /// TOML configuration file (settings in it are overridden by FIRSTLINE_* variables).
    #[arg(long, global = true, env = "FIRSTLINE_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the Slack bot: receive events, record them, relay them to Kafka and Temporal.
    Bot(bot::Args),
    /// Run a round worker: the incident_round workflow and its activities on Temporal.
    Worker(worker::Args),
    /// Run everything on this machine: PostgreSQL+pgvector, Temporal and Kafka, migrated and ready.
    Dev(dev::Args),
    /// Apply the database migrations to database.url (any PostgreSQL with pgvector).
    Migrate(migrate::Args),
    /// Check the environment: tools, ports, database, Temporal, Kafka; say how to fix what's wrong.
    Doctor,
    /// Investigate one alert in-process with the incident graph and print the report.
    Investigate(investigate::Args),
    /// Run lab scenarios and HolmesGPT fixtures through the incident graph; print a table.
    Eval(eval::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings = match Settings::load(cli.config.as_deref()) {
        Ok(settings) => settings,
        Err(e) => return fail(&anyhow::Error::new(e)),
    };
    if let Err(e) = telemetry::init(&settings.log) {
        return fail(&e);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&anyhow::Error::new(e).context("starting the async runtime")),
    };
    // Commands run on the main thread (block_on), which matters for `dev`: children get a
    // parent-death signal tied to the thread that spawned them.
    let result = runtime.block_on(async {
        match cli.command {
            Command::Bot(args) => bot::run(settings, args).await,
            Command::Worker(args) => worker::run(settings, args).await,
            Command::Dev(args) => dev::run(settings, args).await,
            Command::Migrate(args) => migrate::run(settings, args).await,
            Command::Doctor => doctor::run(settings).await,
            Command::Investigate(args) => investigate::run(settings, args).await,
            Command::Eval(args) => eval::run(settings, args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => fail(&e),
    }
}

/// One line: the error and those of its causes that its message does not already include
/// (our error types often put the cause in their own text, to read well on their own).
fn fail(error: &anyhow::Error) -> ExitCode {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
    }
    eprintln!("error: {}", line.replace('\n', " "));
    ExitCode::FAILURE
}
