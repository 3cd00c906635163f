//! `firstline dev`: the whole system on one machine, no accounts needed.
//!
//! Starts the embedded stack (PostgreSQL+pgvector, Temporal dev server, Kafka broker), creates and
//! migrates the `firstline` database, writes the addresses to `<state_dir>/env` (shell syntax, so
//! `. .firstline/env` points other commands at this stack), prints one line per service, then
//! waits. Ctrl-C or SIGTERM stops every child; a service dying on its own stops the rest and
//! exits non-zero. The bot, a round worker and the embedder run in this process (with the Slack stand-in when no
//! bot token is configured, and the lab MCP server serving `dev.lab_scenario` when no MCP server
//! is configured); `--no-bot` runs the stack alone, `--demo` posts the lab scenario's alert into
//! the stand-in's #incidents once everything is up, so its round shows in the stand-in's page.

use crate::service::StopSignals;
use firstline_config::env_var;
use firstline_config::{DatabaseSettings, Settings};
use firstline_lab::scenario::Scenario;
use firstline_lab::server::LabHandle;
use firstline_slack::standin::state::INCIDENTS;
use firstline_stack::{Addresses, Stack, StackConfig};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The database the components use.
const DATABASE: &str = "firstline";
/// How long each service gets to stop before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How long creating the message topic may take.
const TOPIC_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the worker gets to finish in-flight activities on Ctrl-C.
const WORKER_STOP: Duration = Duration::from_secs(10);

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run only the stack (PostgreSQL, Temporal, Kafka): no bot, no worker, no Slack stand-in.
    #[arg(long)]
    no_bot: bool,
    /// Once ready, post the lab scenario's alert into the Slack stand-in's #incidents.
    #[arg(long, conflicts_with = "no_bot")]
    demo: bool,
}

pub async fn run(settings: Settings, args: Args) -> anyhow::Result<ExitCode> {
    let mut stop = StopSignals::install()?;
    let config = StackConfig::from_settings(&settings.dev);
    let state_dir = config.state_dir.clone();
    let mut stack = tokio::select! {
        started = Stack::start(config) => started?,
        _ = stop.requested() => return Ok(ExitCode::SUCCESS),
    };
    let addresses = stack.addresses().clone();
    let prepared = async {
        prepare_database(&settings.database, &addresses).await?;
        prepare_topic(&settings, &addresses).await
    };
    if let Err(e) = prepared.await {
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
    let worker_cancel = CancellationToken::new();
    let mut lab = None;
    let mut worker = None;
    let mut embedder = None;
    if let Some(running_bot) = &bot {
        let mut worker_settings = running_bot.settings.clone();
        if worker_settings.mcp.servers.is_empty() {
            lab = start_lab(&settings, &mut worker_settings).await;
        }
        let started = async {
            // One model for both: its weights are read and held once.
            let model = crate::embedding::load(&worker_settings, None).await?;
            let worker = crate::worker::start_worker(
                &worker_settings,
                Arc::clone(&model),
                worker_cancel.clone(),
            )
            .await?;
            let embedder =
                crate::embedder::start_embedder(&worker_settings, model, worker_cancel.clone())
                    .await?;
            anyhow::Ok((worker, embedder))
        };
        match started.await {
            Ok((started_worker, started_embedder)) => {
                worker = Some(started_worker);
                embedder = Some(started_embedder);
            }
            Err(e) => {
                worker_cancel.cancel();
                if let Some(bot) = bot {
                    bot.stop().await;
                }
                stack.stop(STOP_GRACE).await;
                return Err(e);
            }
        }
    }
    let env_file = state_dir.join("env");
    std::fs::write(&env_file, env_lines(&addresses))?;
    for line in bot.iter().flat_map(|b| b.lines.iter()) {
        println!("{line}");
    }
    if let Some(worker) = &worker {
        println!(
            "worker    http://{}/healthz  (rounds on task queue {})",
            worker.http_addr, settings.temporal.task_queue
        );
    }
    if let Some(embedder) = &embedder {
        println!(
            "embedder  http://{}/healthz  (embeds {} for recall by meaning)",
            embedder.http_addr, settings.kafka.topic
        );
    }
    if let Some((_, scenario)) = &lab {
        println!("lab       MCP server serving scenario `{}`", scenario.name);
    }
    print_ready(&addresses, &stack, &env_file);
    if args.demo
        && let (Some(bot), Some((_, scenario))) = (&bot, &lab)
        && let Some(standin) = &bot.standin
    {
        let ts = standin.integration_posts(INCIDENTS, "Alertmanager", &scenario.alert_text());
        println!(
            "demo      posted the `{}` alert (ts {ts}); watch its thread in the stand-in",
            scenario.name
        );
    }

    let worker_run = async {
        match worker {
            Some(worker) => worker.run().await.map_err(anyhow::Error::from),
            None => std::future::pending().await,
        }
    };
    tokio::pin!(worker_run);
    let embedder_run = async {
        match embedder {
            Some(embedder) => embedder.run().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(embedder_run);
    let outcome = tokio::select! {
        _ = stop.requested() => Ok(ExitCode::SUCCESS),
        (service, status) = stack.exited() => Err(anyhow::anyhow!(
            "{service} exited unexpectedly ({}); stopped the rest (logs in {})",
            status.map_or_else(|e| e.to_string(), |s| s.to_string()),
            state_dir.join("logs").display()
        )),
        result = &mut worker_run => Err(anyhow::anyhow!(
            "the round worker stopped unexpectedly: {}",
            result.err().map_or_else(|| "no error".to_string(), |e| format!("{e:#}"))
        )),
        result = &mut embedder_run => Err(anyhow::anyhow!(
            "the embedder stopped unexpectedly: {}",
            result.err().map_or_else(|| "no error".to_string(), |e| format!("{e:#}"))
        )),
    };
    eprintln!("stopping…");
    worker_cancel.cancel();
    let _ = tokio::time::timeout(WORKER_STOP, async {
        tokio::join!(&mut worker_run, &mut embedder_run)
    })
    .await;
    if let Some(bot) = bot {
        bot.stop().await;
    }
    if let Some((lab, _)) = lab {
        lab.shutdown().await;
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

/// Creates the message topic before anything subscribes to it: the embedder's consumer would
/// otherwise log librdkafka's "Subscribed topic not available" error until the first publish.
async fn prepare_topic(settings: &Settings, addresses: &Addresses) -> anyhow::Result<()> {
    let kafka = firstline_config::KafkaSettings {
        brokers: addresses.kafka_brokers(),
        ..settings.kafka.clone()
    };
    let sink = firstline_bot::relay::kafka::KafkaSink::new(&kafka, TOPIC_TIMEOUT)?;
    sink.ensure_topic().await.map_err(anyhow::Error::msg)
}

/// The settings other processes need to use this stack, as `FIRSTLINE_*` assignments.
fn env_lines(addresses: &Addresses) -> String {
    [
        (
            "database.url",
            addresses.database_url(DATABASE).expose().to_string(),
        ),
        ("temporal.address", addresses.temporal_address()),
        ("kafka.brokers", addresses.kafka_brokers()),
    ]
    .iter()
    .map(|(key, value)| format!("{}={value}\n", env_var(key)))
    .collect()
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

/// Serves `dev.lab_scenario` over MCP and points `worker_settings` at it. Without the scenario
/// (a checkout without `lab/`), says so and leaves the worker without tools.
async fn start_lab(
    settings: &Settings,
    worker_settings: &mut Settings,
) -> Option<(LabHandle, Scenario)> {
    let dir = settings.dev.lab_dir.join(&settings.dev.lab_scenario);
    let scenario = match Scenario::load(&dir) {
        Ok(scenario) => scenario,
        Err(e) => {
            eprintln!(
                "warning: no lab scenario at {} ({e}); rounds will run without MCP tools \
                 (set {} / {})",
                dir.display(),
                env_var("dev.lab_dir"),
                env_var("dev.lab_scenario")
            );
            return None;
        }
    };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    match firstline_lab::server::serve_http(scenario.clone(), addr).await {
        Ok(lab) => {
            worker_settings.mcp.servers = vec![firstline_config::McpServerSettings {
                name: "lab".into(),
                url: Some(lab.mcp_url()),
                profile: Some("lab".into()),
                ..firstline_config::McpServerSettings::default()
            }];
            Some((lab, scenario))
        }
        Err(e) => {
            eprintln!(
                "warning: cannot start the lab MCP server: {e}; rounds will run without tools"
            );
            None
        }
    }
}
