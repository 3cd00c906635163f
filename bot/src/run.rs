//! Assembling and running the bot: database pool, Slack identity, the event transport (HTTP or
//! Socket Mode), the reaction task, the two relays and the outbox's retention, all stopped by one
//! cancellation token.

use crate::approval::Approvals;
use crate::classify::Classifier;
use crate::ingest::writer::WriterConfig;
use crate::pipeline::{Pipeline, Touches};
use crate::relay::kafka::KafkaSink;
use crate::relay::temporal::{TemporalSink, TemporalTarget};
use crate::relay::{self, RelayConfig};
use crate::{http, reactions, socket};
use firstline_config::{Settings, SlackMode, env_var};
use firstline_slack::{SlackApi, SlackApiError};
use metrics_exporter_prometheus::PrometheusHandle;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Timeout of Web API calls the bot makes itself.
const SLACK_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the bot could not start.
#[derive(Debug, thiserror::Error)]
pub enum BotError {
    /// The database is unreachable or broken.
    #[error(transparent)]
    Store(#[from] firstline_store::StoreError),
    /// A setting the chosen mode needs is missing.
    #[error("{setting} ({}) must be set: {why}", env_var(setting))]
    Missing {
        /// Dotted name.
        setting: &'static str,
        /// Why it is needed.
        why: &'static str,
    },
    /// `auth.test` failed.
    #[error(
        "asking Slack who the bot is (auth.test): {0} (check {var})",
        var = env_var("slack.bot_token")
    )]
    Identity(#[from] SlackApiError),
    /// The listen address cannot be bound.
    #[error(
        "cannot listen on {address} (bot.listen / {}): {source}",
        env_var("bot.listen")
    )]
    Listen {
        /// The address.
        address: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Kafka client setup failed.
    #[error(transparent)]
    Kafka(#[from] relay::kafka::KafkaSetupError),
}

/// Which parts to run (tests run some alone; `firstline bot` runs all).
#[derive(Debug, Clone, Copy)]
pub struct Parts {
    /// Receive events (HTTP or Socket Mode, per `slack.mode`).
    pub ingest: bool,
    /// Run the Kafka relay.
    pub publish: bool,
    /// Run the Temporal relay.
    pub wake: bool,
}

impl Parts {
    /// Everything.
    pub const ALL: Parts = Parts {
        ingest: true,
        publish: true,
        wake: true,
    };
}

/// A started bot.
#[derive(Debug)]
pub struct Running {
    /// Where HTTP listens: `/healthz` and `/metrics`, and `/slack/events` in Events API mode.
    pub http_addr: Option<SocketAddr>,
    events_api: bool,
    tasks: JoinSet<()>,
}

impl Running {
    /// The Events API endpoint, when the bot takes events over HTTP (not in Socket Mode).
    pub fn events_url(&self) -> Option<String> {
        self.http_addr
            .filter(|_| self.events_api)
            .map(|addr| format!("http://{addr}/slack/events"))
    }

    /// Waits until every task has stopped (after the token was cancelled).
    pub async fn wait(mut self) {
        while let Some(joined) = self.tasks.join_next().await {
            if let Err(e) = joined
                && e.is_panic()
            {
                tracing::error!(error = %e, "a bot task panicked");
            }
        }
    }
}

/// Starts the bot's `parts` with `settings`; everything stops when `cancel` fires. `metrics` is
/// the process's Prometheus recorder, served on `/metrics` (404 without one).
pub async fn start(
    settings: &Settings,
    parts: Parts,
    metrics: Option<PrometheusHandle>,
    cancel: CancellationToken,
) -> Result<Running, BotError> {
    firstline_slack::install_crypto_provider();
    let pool = firstline_store::connect(&settings.database).await?;
    let mut tasks = JoinSet::new();
    let mut http_addr = None;

    if parts.ingest {
        let slack = &settings.slack;
        let api = slack.bot_token.is_set().then(|| {
            Arc::new(SlackApi::new(
                &slack.api_url,
                &slack.bot_token,
                SLACK_CALL_TIMEOUT,
            ))
        });
        let bot_user_id = match (&api, slack.bot_user_id.trim()) {
            (_, id) if !id.is_empty() => id.to_string(),
            (Some(api), _) => api.auth_test().await?.user_id,
            (None, _) => {
                tracing::warn!(
                    "no slack.bot_user_id and no bot token: only app_mention events count as mentions"
                );
                String::new()
            }
        };
        let touches = api.as_ref().map(|api| {
            let (tx, rx) = tokio::sync::mpsc::channel(1024);
            tasks.spawn(reactions::run(api.clone(), rx, cancel.clone()));
            Touches {
                api: api.clone(),
                queue: tx,
                react: settings.bot.ack_reaction,
            }
        });
        let pipeline = Pipeline::new(
            pool.clone(),
            Classifier::new(&bot_user_id, &settings.bot.alert_rules),
            Duration::from_millis(settings.bot.ingest_timeout_ms),
            WriterConfig {
                max_batch: usize::try_from(settings.bot.ingest_batch_max).unwrap_or(usize::MAX),
                transactions: usize::try_from(settings.bot.ingest_transactions)
                    .unwrap_or(usize::MAX),
                group_window: settings.grouping.window(),
            },
            touches,
            Approvals::new(settings.actions.clone(), api.clone()),
        );
        match slack.mode {
            SlackMode::Http => {
                if !slack.signing_secret.is_set() {
                    return Err(BotError::Missing {
                        setting: "slack.signing_secret",
                        why: "the Events API (slack.mode = http) verifies every request with it",
                    });
                }
                let router = http::router(
                    pipeline,
                    &slack.signing_secret,
                    settings.bot.body_limit_bytes,
                    metrics,
                );
                http_addr = Some(serve(&settings.bot.listen, router, &mut tasks, &cancel).await?);
            }
            SlackMode::Socket => {
                let listener =
                    socket::SocketModeListener::new(pipeline, &slack.api_url, &slack.app_token);
                tasks.spawn(listener.run(cancel.clone()));
                let router = http::operations_router(metrics);
                http_addr = Some(serve(&settings.bot.listen, router, &mut tasks, &cancel).await?);
            }
        }
    }

    let relay_config = RelayConfig::from_settings(&settings.bot);
    let call_timeout = Duration::from_secs(settings.bot.relay_call_timeout_secs);
    if parts.publish {
        let sink = KafkaSink::new(&settings.kafka, call_timeout)?;
        tasks.spawn(relay::run(
            pool.clone(),
            sink,
            relay_config.clone(),
            cancel.clone(),
        ));
    }
    if parts.wake {
        let sink = TemporalSink::new(TemporalTarget {
            settings: settings.temporal.clone(),
            timeout: call_timeout,
        });
        tasks.spawn(relay::run(pool.clone(), sink, relay_config, cancel.clone()));
    }
    if parts.publish || parts.wake {
        let keep = Duration::from_secs(settings.bot.outbox_retention_hours.saturating_mul(3600));
        tasks.spawn(relay::prune::run(pool.clone(), keep, cancel.clone()));
    }
    let closing = pool.clone();
    let stop = cancel.clone();
    tasks.spawn(async move {
        stop.cancelled().await;
        closing.close().await;
    });
    Ok(Running {
        http_addr,
        events_api: parts.ingest && settings.slack.mode == SlackMode::Http,
        tasks,
    })
}

/// Binds `listen` and serves `router` until `cancel`; returns the bound address.
async fn serve(
    listen: &str,
    router: axum::Router,
    tasks: &mut JoinSet<()>,
    cancel: &CancellationToken,
) -> Result<SocketAddr, BotError> {
    let listen_error = |source| BotError::Listen {
        address: listen.to_string(),
        source,
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(listen_error)?;
    let addr = listener.local_addr().map_err(listen_error)?;
    tracing::info!(%addr, "HTTP listening");
    let stop = cancel.clone();
    tasks.spawn(async move {
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "HTTP server failed");
        }
    });
    Ok(addr)
}
