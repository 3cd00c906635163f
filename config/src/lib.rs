//! Firstline's settings.
//!
//! Every process (`firstline dev`, and later `bot`, `worker`, `embedder`) reads one [`Settings`]
//! value, layered in this order, later layers winning:
//!
//! 1. the defaults in this module (a newcomer's `firstline dev` needs no configuration at all);
//! 2. a TOML file, when one is given (`--config`, or `FIRSTLINE_CONFIG`);
//! 3. environment variables `FIRSTLINE_<SECTION>__<KEY>`, e.g. `FIRSTLINE_DATABASE__URL`.
//!
//! A bad value fails at start-up with a message naming the setting (see [`ConfigError`]).
//! Secrets (the database URL's password, Slack tokens and signing secret) never appear in `Debug` output or logs.

mod secret;
mod settings;

pub use secret::DatabaseUrl;
pub use settings::{
    AlertRule, BotSettings, DatabaseSettings, DevSettings, KafkaSettings, LogFormat, LogSettings,
    RoundSettings, SecretString, Settings, SlackMode, SlackSettings, TemporalSettings,
    WorkerSettings,
};
pub use settings::{
    CapabilityBinding, MCP_CAPABILITIES, MCP_PROFILES, McpServerSettings, McpSettings,
};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use std::path::Path;

/// Prefix of every environment variable Firstline reads.
pub const ENV_PREFIX: &str = "FIRSTLINE_";

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
        env: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

impl Settings {
    /// Loads defaults, then `file` (if any), then `FIRSTLINE_*` variables from the process
    /// environment.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::from_figment(Self::figment(file)?)
    }

    /// The layered provider, exposed so tests can add layers of their own.
    pub fn figment(file: Option<&Path>) -> Result<Figment, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        if let Some(path) = file {
            if !path.is_file() {
                return Err(ConfigError::MissingFile {
                    path: path.display().to_string(),
                });
            }
            figment = figment.merge(Toml::file(path));
        }
        // Every setting is `SECTION__KEY`; other FIRSTLINE_* names (FIRSTLINE_CONFIG, the test
        // harness's FIRSTLINE_TEST_*) are not settings and must not be rejected as unknown ones.
        Ok(figment.merge(
            Env::prefixed(ENV_PREFIX)
                .filter(|key| key.as_str().contains("__"))
                .split("__")
                .lowercase(true),
        ))
    }

    /// Extracts and validates settings from a provider.
    pub fn from_figment(figment: Figment) -> Result<Self, ConfigError> {
        let settings: Settings = figment
            .extract()
            .map_err(|e| ConfigError::Invalid(one_line(&e)))?;
        settings.validate()?;
        Ok(settings)
    }
}

/// figment errors can chain several causes over several lines; an operator wants one line.
fn one_line(error: &figment::Error) -> String {
    error
        .clone()
        .into_iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests;
