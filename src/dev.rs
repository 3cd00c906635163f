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
//! With `actions.enabled` and neither `actions.server` nor `mcp.servers` set, approved actions
//! run through the lab's write endpoint ([`load_settings`]); the approvers are never invented.

use crate::service::StopSignals;
use firstline_config::env_var;
use firstline_config::{ConfigError, DatabaseSettings, McpServerSettings, Settings};
use firstline_lab::scenario::Scenario;
use firstline_lab::server::LabHandle;
use firstline_slack::standin::state::{INCIDENTS, ONCALL_USER};
use firstline_stack::{Addresses, Stack, StackConfig};
use std::path::Path;
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

/// The name `actions.server` gets when dev points it at the lab's write endpoint.
const LAB_WRITE: &str = "lab-write";
/// `actions.server.url` until the lab is up and has an address (never dialled: dev replaces it
/// or refuses to start).
const LAB_WRITE_PENDING: &str = "http://lab-write.invalid/write/mcp";

#[derive(Debug, clap::Args)]
#[command(after_help = actions_help())]
pub struct Args {
    /// Run only the stack (PostgreSQL, Temporal, Kafka): no bot, no worker, no Slack stand-in.
    #[arg(long)]
    no_bot: bool,
    /// Once ready, post the lab scenario's alert into the Slack stand-in's #incidents.
    #[arg(long, conflicts_with = "no_bot")]
    demo: bool,
}

pub async fn run(mut settings: Settings, args: Args) -> anyhow::Result<ExitCode> {
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
    // The lab first: the bot and the worker both need the address of its write endpoint when
    // approved actions run through it.
    let mut lab = None;
    if !args.no_bot && settings.mcp.servers.is_empty() {
        lab = start_lab(&settings).await;
    }
    if !args.no_bot
        && let Err(e) = point_actions_at_lab(&mut settings, lab.as_ref().map(|(lab, _)| lab))
    {
        stop_lab(lab).await;
        stack.stop(STOP_GRACE).await;
        return Err(e);
    }
    let bot = if args.no_bot {
        None
    } else {
        match crate::bot::start_for_dev(&settings, &addresses, DATABASE).await {
            Ok(bot) => Some(bot),
            Err(e) => {
                stop_lab(lab).await;
                stack.stop(STOP_GRACE).await;
                return Err(e);
            }
        }
    };
    let worker_cancel = CancellationToken::new();
    let mut worker = None;
    let mut embedder = None;
    if let Some(running_bot) = &bot {
        let mut worker_settings = running_bot.settings.clone();
        if let Some((lab, _)) = &lab {
            worker_settings.mcp.servers = vec![McpServerSettings {
                name: "lab".into(),
                url: Some(lab.mcp_url()),
                profile: Some("lab".into()),
                ..McpServerSettings::default()
            }];
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
                stop_lab(lab).await;
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
    if bot.is_some() && settings.actions.enabled {
        println!("{}", actions_line(&settings));
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
    stop_lab(lab).await;
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

/// Serves `dev.lab_scenario` over MCP (read at `/mcp`, write at `/write/mcp`). Without the
/// scenario (a checkout without `lab/`), says so and leaves the worker without tools.
async fn start_lab(settings: &Settings) -> Option<(LabHandle, Scenario)> {
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
        Ok(lab) => Some((lab, scenario)),
        Err(e) => {
            eprintln!(
                "warning: cannot start the lab MCP server: {e}; rounds will run without tools"
            );
            None
        }
    }
}

async fn stop_lab(lab: Option<(LabHandle, Scenario)>) {
    if let Some((lab, _)) = lab {
        lab.shutdown().await;
    }
}

/// Loads the settings as every command does (defaults, file, `FIRSTLINE_*`), except that with
/// `actions.enabled` and neither `actions.server` nor `mcp.servers` set — dev serving the lab —
/// `actions.server` is the lab's write endpoint, which [`run`] addresses once the lab is up. The
/// approvers are never filled in: dev refuses to start without, saying how to list the stand-in's
/// on-call user.
pub fn load_settings(file: Option<&Path>) -> anyhow::Result<Settings> {
    let mut figment = Settings::figment(file)?;
    let enabled = figment
        .extract_inner::<bool>("actions.enabled")
        .unwrap_or(false);
    // A missing key and an explicit "nothing" (the defaults' `None`, an empty list) alike.
    let unset = |key: &str| {
        figment
            .extract_inner::<serde_json::Value>(key)
            .map_or(true, |v| {
                v.is_null() || v.as_array().is_some_and(Vec::is_empty)
            })
    };
    if enabled && unset("actions.server") && unset("mcp.servers") {
        let server = McpServerSettings {
            name: LAB_WRITE.into(),
            url: Some(LAB_WRITE_PENDING.into()),
            profile: Some("kubernetes-mcp-server".into()),
            ..McpServerSettings::default()
        };
        figment = figment.merge(("actions.server", server));
    }
    Settings::from_figment(figment).map_err(|e| match e {
        ConfigError::Rejected {
            setting: "actions.approvers",
            ref reason,
            ..
        } if reason.contains("at least one approver") => {
            anyhow::anyhow!("{e}; {}", approvers_hint())
        }
        e => anyhow::Error::new(e),
    })
}

/// How to let the stand-in's on-call person (whose clicks the stand-in's page sends) approve.
fn approvers_hint() -> String {
    format!(
        "in dev, to let the stand-in's on-call user approve: {}='{{\"*\"=[\"{ONCALL_USER}\"]}}'",
        env_var("actions.approvers")
    )
}

/// `firstline dev --help`'s closing note.
fn actions_help() -> String {
    format!(
        "Actions with approval (docs/actions.md): with {}=true and neither actions.server nor \
         mcp.servers set, a round may propose one catalogue action, executed once an approver \
         clicks Approve through the lab's write endpoint (the scenario's world changes). Dev \
         lists no approver of its own; the stand-in's page clicks as {ONCALL_USER}, so e.g. \
         {}='{{\"*\"=[\"{ONCALL_USER}\"]}}' (a map: per namespace, or \"*\" for all; quote \
         the \"*\" key).",
        env_var("actions.enabled"),
        env_var("actions.approvers"),
    )
}

/// When `actions.server` is the lab's write endpoint still to be addressed, addresses it; without
/// a lab to act on, refuses (a server that does not exist must not be configured).
fn point_actions_at_lab(settings: &mut Settings, lab: Option<&LabHandle>) -> anyhow::Result<()> {
    let Some(server) = settings
        .actions
        .server
        .as_mut()
        .filter(|s| s.url.as_deref() == Some(LAB_WRITE_PENDING))
    else {
        return Ok(());
    };
    match lab {
        Some(lab) => {
            server.url = Some(lab.write_url());
            Ok(())
        }
        None => Err(anyhow::anyhow!(
            "{} is true but no lab is serving (see the warning above) and {} is not set: \
             there is nothing to act on",
            env_var("actions.enabled"),
            env_var("actions.server")
        )),
    }
}

/// The `actions` line of the ready lines: who may approve and where approved actions go.
fn actions_line(settings: &Settings) -> String {
    let approvers: Vec<String> = settings
        .actions
        .approvers
        .iter()
        .filter(|(_, ids)| !ids.is_empty())
        .map(|(namespace, ids)| format!("{namespace}: {}", ids.join(", ")))
        .collect();
    let server = settings.actions.server.as_ref();
    format!(
        "actions   on: approvers {}; approved actions run through {} ({}), proposals expire after {}s",
        approvers.join("; "),
        server.and_then(|s| s.url.as_deref()).unwrap_or("?"),
        server.map_or("?", |s| s.name.as_str()),
        settings.actions.approval_timeout_secs
    )
}
