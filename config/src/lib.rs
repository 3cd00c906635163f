//! Firstline's settings.
//!
//! Every process (`firstline bot`, `worker`, `dev`, …) reads one [`Settings`] value, layered in
//! this order, later layers winning:
//!
//! 1. each section's defaults (a newcomer's `firstline dev` needs no configuration at all);
//! 2. a TOML file, when one is given (`--config`, or `FIRSTLINE_CONFIG`);
//! 3. environment variables `FIRSTLINE_<SECTION>__<KEY>`, e.g. `FIRSTLINE_DATABASE__URL`.
//!
//! A bad value fails at start-up with a message naming the setting (see [`ConfigError`]).
//! Secrets (the database URL's password, Slack tokens and signing secret) never appear in `Debug`
//! output or logs.

mod env;
mod secret;
mod settings;

pub use env::{ENV_PREFIX, env_var};
pub use secret::{DatabaseUrl, SecretString};
pub use settings::TelemetrySettings;
pub use settings::{ANY_NAMESPACE, ActionsSettings, GroupingSettings};
pub use settings::{
    AlertRule, BotSettings, DatabaseSettings, DevSettings, KafkaSettings, LogFormat, LogSettings,
    RoundSettings, Settings, SlackMode, SlackSettings, TemporalSettings, WorkerSettings,
};
pub use settings::{
    CapabilityBinding, MCP_CAPABILITIES, MCP_PROFILES, McpServerSettings, McpSettings,
};
pub use settings::{EmbedderSettings, EmbeddingSettings, LOCAL_EMBEDDING_MODEL, LlmSettings};
pub use settings::{KafkaSecurity, SASL_MECHANISMS};

/// Why the settings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The configuration file named on the command line does not exist.
    #[error("configuration file {path} does not exist (set by --config or FIRSTLINE_CONFIG)")]
    MissingFile {
        /// The path that was given.
        path: String,
    },
    /// A setting has a value of the wrong shape; figment's message names the key.
    #[error("invalid configuration: {0}")]
    Invalid(String),
    /// A setting parsed but makes no sense.
    #[error("invalid setting `{setting}` ({env}): {reason}")]
    Rejected {
        /// Dotted name, e.g. `dev.postgres_port`.
        setting: &'static str,
        /// The environment variable that sets it.
        env: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl ConfigError {
    /// Rejects `setting`; its variable is derived from the name so the two cannot disagree.
    pub(crate) fn rejected(setting: &'static str, reason: impl Into<String>) -> Self {
        Self::Rejected {
            setting,
            env: env_var(setting),
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests;
