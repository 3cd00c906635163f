//! The settings tree: one section per outside system, each with its defaults and its own checks.
//!
//! Field docs are the operator's documentation: the README's configuration table is checked
//! against [`Settings::keys`] by a test, so a new setting cannot go undocumented.

mod actions;
mod bot;
mod check;
mod database;
mod dev;
mod embedding;
mod grouping;
mod kafka;
mod llm;
mod load;
mod log;
mod mcp;
mod mcp_server;
mod round;
mod slack;
mod telemetry;
mod temporal;
mod worker;

pub use actions::{ANY_NAMESPACE, ActionsSettings};
pub use bot::{AlertRule, BotSettings};
pub use database::DatabaseSettings;
pub use dev::DevSettings;
pub use embedding::{EmbedderSettings, EmbeddingSettings, LOCAL_EMBEDDING_MODEL};
pub use grouping::GroupingSettings;
pub use kafka::{KafkaSecurity, KafkaSettings, SASL_MECHANISMS};
pub use llm::LlmSettings;
pub use log::{LogFormat, LogSettings};
pub use mcp::{CapabilityBinding, MCP_CAPABILITIES, McpSettings};
pub use mcp_server::{MCP_PROFILES, McpServerSettings};
pub use round::RoundSettings;
pub use slack::{SlackMode, SlackSettings};
pub use telemetry::TelemetrySettings;
pub use temporal::TemporalSettings;
pub use worker::WorkerSettings;

use crate::{ConfigError, env_var};
use serde::{Deserialize, Serialize};

/// All of Firstline's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// PostgreSQL, the source of truth.
    pub database: DatabaseSettings,
    /// The Temporal cluster that runs incident rounds.
    pub temporal: TemporalSettings,
    /// The Kafka-protocol broker every message is published to.
    pub kafka: KafkaSettings,
    /// The Slack app: tokens, signing secret, how events arrive.
    pub slack: SlackSettings,
    /// The bot process: HTTP listener, alert rules, outbox relays.
    pub bot: BotSettings,
    /// The embedded stack `firstline dev` runs on one machine.
    pub dev: DevSettings,
    /// Logging.
    pub log: LogSettings,
    /// MCP servers the investigation reads through, and which tool answers each capability.
    pub mcp: McpSettings,
    /// Limits of the per-thread round workflow (every loop and wait of a round is bounded).
    pub round: RoundSettings,
    /// The worker process that runs rounds.
    pub worker: WorkerSettings,
    /// The optional OpenAI-compatible model and its per-round budget (empty `base_url`: none).
    pub llm: LlmSettings,
    /// The model that embeds messages and incidents for recall by meaning (empty `base_url`:
    /// the local all-MiniLM-L6-v2).
    pub embedding: EmbeddingSettings,
    /// The embedder process that reads the message topic and writes the vectors.
    pub embedder: EmbedderSettings,
    /// OpenTelemetry traces (empty `otlp_endpoint`: none are exported).
    pub telemetry: TelemetrySettings,
    /// Acting on the cluster with a person's approval (off by default).
    pub actions: ActionsSettings,
    /// Alerts that share a cause, linked to one analysis.
    pub grouping: GroupingSettings,
}

impl Settings {
    /// Every setting as `(dotted key, environment variable)`, in declaration order.
    pub fn keys() -> Vec<(String, String)> {
        let tree = serde_json::to_value(Settings::default()).unwrap_or_default();
        let mut keys = Vec::new();
        if let serde_json::Value::Object(sections) = tree {
            for (section, fields) in sections {
                if let serde_json::Value::Object(fields) = fields {
                    for field in fields.keys() {
                        let key = format!("{section}.{field}");
                        let env = env_var(&key);
                        keys.push((key, env));
                    }
                }
            }
        }
        keys
    }

    /// Checks every section; the first bad value is reported.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        // `log` has nothing to check here: its filter's syntax belongs to the tracing setup.
        self.database.validate()?;
        self.temporal.validate()?;
        self.kafka.validate()?;
        self.slack.validate()?;
        self.bot.validate()?;
        self.worker.validate()?;
        self.round.validate()?;
        self.llm.validate()?;
        self.embedding.validate()?;
        self.embedder.validate()?;
        self.telemetry.validate()?;
        self.dev.validate()?;
        self.mcp.validate()?;
        self.actions.validate(&self.mcp)
    }
}
