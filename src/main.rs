//! `firstline`: the one binary. Each subcommand is a process of the system or an
//! operator's tool; this file only parses the command line, loads settings, starts telemetry and
//! turns errors into one line on stderr and a non-zero exit code.

mod bot;
mod dev;
mod doctor;
mod embedder;
mod embedding;
mod eval;
mod feedback;
mod health;
mod investigate;
mod migrate;
mod redact;
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
    /// Run the embedder: read the message topic, embed people's messages and new incidents into
    /// pgvector for recall by meaning (`--reindex`: re-embed from Postgres, then exit).
    Embedder(embedder::Args),
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
    /// List the rounds people marked "Wrong cause", each as the start of a lab scenario.
    Feedback(feedback::Args),
    /// Redact secrets from stdin as Firstline does at ingest; print the result on stdout.
    Redact(redact::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `dev` may point `actions.server` at its lab, which validation must know before it runs.
    let settings = match &cli.command {
        Command::Dev(_) => dev::load_settings(cli.config.as_deref()),
        _ => Settings::load(cli.config.as_deref()).map_err(anyhow::Error::new),
    };
    let settings = match settings {
        Ok(settings) => settings,
        Err(e) => return fail(&e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&anyhow::Error::new(e).context("starting the async runtime")),
    };
    // Inside the runtime: the trace exporter's connection task runs on it.
    let service = format!("firstline-{}", cli.command.name());
    let traces = {
        let _runtime = runtime.enter();
        telemetry::init(&settings.log, &settings.telemetry, &service)
    };
    let traces = match traces {
        Ok(traces) => traces,
        Err(e) => return fail(&e),
    };
    // Commands run on the main thread (block_on), which matters for `dev`: children get a
    // parent-death signal tied to the thread that spawned them.
    let result = runtime.block_on(async {
        match cli.command {
            Command::Bot(args) => bot::run(settings, args).await,
            Command::Worker(args) => worker::run(settings, args).await,
            Command::Embedder(args) => embedder::run(settings, args).await,
            Command::Dev(args) => dev::run(settings, args).await,
            Command::Migrate(args) => migrate::run(settings, args).await,
            Command::Doctor => doctor::run(settings).await,
            Command::Investigate(args) => investigate::run(settings, args).await,
            Command::Eval(args) => eval::run(settings, args).await,
            Command::Feedback(args) => feedback::run(settings, args).await,
            Command::Redact(args) => redact::run(args),
        }
    });
    // Queued spans go out while the runtime still runs (bounded; dropping it would too).
    traces.shutdown();
    match result {
        Ok(code) => code,
        Err(e) => fail(&e),
    }
}

impl Command {
    /// The subcommand's name, as typed.
    fn name(&self) -> &'static str {
        match self {
            Command::Bot(_) => "bot",
            Command::Embedder(_) => "embedder",
            Command::Worker(_) => "worker",
            Command::Dev(_) => "dev",
            Command::Migrate(_) => "migrate",
            Command::Doctor => "doctor",
            Command::Investigate(_) => "investigate",
            Command::Eval(_) => "eval",
            Command::Feedback(_) => "feedback",
            Command::Redact(_) => "redact",
        }
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
