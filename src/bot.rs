//! `firstline bot`: the Slack ingress process. Applies pending migrations,
//! then runs the event transport (Events API or Socket Mode, per `slack.mode`) and both outbox
//! relays until SIGTERM or Ctrl-C, then stops them and waits. `FAILPOINTS` (fault injection for
//! the crash tests) is read once here.

use crate::service::Service;
use firstline_bot::{Parts, Running};
use firstline_config::Settings;
use firstline_config::env_var;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn run(settings: Settings, _args: Args) -> anyhow::Result<ExitCode> {
    let mut service = Service::prepare(&settings).await?;
    let cancel = CancellationToken::new();
    let running = start(&settings, &cancel).await?;
    if let Some(url) = running.events_url() {
        println!("bot       {url}");
    } else if let Some(addr) = running.http_addr {
        println!("bot       Socket Mode; health and metrics on http://{addr}");
    }
    service.stop.requested().await;
    eprintln!("stopping…");
    cancel.cancel();
    running.wait().await;
    Ok(ExitCode::SUCCESS)
}

/// Every part of the bot, with this process's metrics, stopped by `cancel`.
async fn start(settings: &Settings, cancel: &CancellationToken) -> anyhow::Result<Running> {
    let metrics = crate::telemetry::metrics();
    Ok(firstline_bot::start(settings, Parts::ALL, metrics, cancel.clone()).await?)
}

/// The bot as `firstline dev` runs it: against the embedded stack, and — when no bot token is
/// configured — against a local Slack stand-in it starts first.
pub struct DevBot {
    cancel: CancellationToken,
    running: firstline_bot::Running,
    /// What to print: one line per endpoint.
    pub lines: Vec<String>,
    /// The settings the bot runs with (the stack's addresses, the stand-in's URL and token):
    /// the worker in the same `dev` uses them too.
    pub settings: Settings,
    /// The stand-in, when no Slack token is configured.
    pub standin: Option<firstline_slack::standin::StandIn>,
}

/// Signing secret shared by the stand-in and the bot in dev when none is configured.
const DEV_SIGNING_SECRET: &str = "firstline-dev-signing-secret";
/// Bot token the stand-in accepts.
const DEV_BOT_TOKEN: &str = "xoxb-firstline-standin";

/// Starts the bot (and the stand-in when `slack.bot_token` is empty) on `addresses`.
pub async fn start_for_dev(
    settings: &Settings,
    addresses: &firstline_stack::Addresses,
    database: &str,
) -> anyhow::Result<DevBot> {
    use firstline_config::SecretString;
    use firstline_slack::standin::{StandIn, StandInConfig};
    let mut settings = settings.clone();
    settings.database.url = addresses.database_url(database);
    // The embedded dev server: plain gRPC, namespace `default`. Credentials meant for another
    // Temporal (an API key, certificates) must not follow the address here.
    settings.temporal = firstline_config::TemporalSettings {
        address: addresses.temporal_address(),
        task_queue: settings.temporal.task_queue.clone(),
        ..firstline_config::TemporalSettings::default()
    };
    settings.kafka.brokers = addresses.kafka_brokers();
    let cancel = CancellationToken::new();
    let mut lines = Vec::new();
    let standin = if settings.slack.bot_token.is_set() {
        None
    } else {
        if !settings.slack.signing_secret.is_set() {
            settings.slack.signing_secret = SecretString::new(DEV_SIGNING_SECRET);
        }
        let listen = std::net::SocketAddr::from(([127, 0, 0, 1], settings.slack.standin_port));
        let standin = StandIn::start(
            StandInConfig {
                listen,
                signing_secret: settings.slack.signing_secret.expose().to_string(),
                events_url: None,
                retry_delay: std::time::Duration::from_secs(5),
            },
            cancel.clone(),
        )
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot start the Slack stand-in on {listen}: {e} (set {} to another port, 0 for any)",
                env_var("slack.standin_port")
            )
        })?;
        settings.slack.bot_token = SecretString::new(DEV_BOT_TOKEN);
        settings.slack.api_url = standin.api_url();
        settings.slack.mode = firstline_config::SlackMode::Http;
        Some(standin)
    };
    let running = start(&settings, &cancel).await?;
    if let Some(url) = running.events_url() {
        lines.push(format!("bot       {url}"));
    }
    if let Some(standin) = &standin {
        standin.set_events_url(running.events_url());
        lines.push(format!(
            "slack     {}  (Slack stand-in: open it to watch channels and threads)",
            standin.url()
        ));
        lines.push(format!(
            "          test alert: curl -s -XPOST {}/webhook/{} -d '{{\"username\":\"Alertmanager\",\"text\":\"[FIRING:1] KubePodCrashLooping checkout\"}}'",
            standin.url(),
            firstline_slack::standin::state::INCIDENTS
        ));
    }
    Ok(DevBot {
        cancel,
        running,
        lines,
        settings,
        standin,
    })
}

impl DevBot {
    /// Stops the bot and the stand-in.
    pub async fn stop(self) {
        self.cancel.cancel();
        self.running.wait().await;
    }
}
