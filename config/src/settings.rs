//! The settings tree and its defaults.
//!
//! Each section is one outside system. Field docs are the operator's documentation: the README's
//! configuration table is checked against [`Settings::keys`] by a test, so a new setting cannot
//! go undocumented.

use crate::{ConfigError, DatabaseUrl};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
    /// The embedded stack `firstline dev` runs on one machine.
    pub dev: DevSettings,
    /// Logging.
    pub log: LogSettings,
}

/// PostgreSQL (with the pgvector extension).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    /// `postgres://user:password@host:port/database`.
    pub url: DatabaseUrl,
    /// Connections in each process's pool.
    pub max_connections: u32,
    /// Seconds to wait for a connection before giving up.
    pub connect_timeout_secs: u64,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: DatabaseUrl::new("postgres://firstline:firstline@127.0.0.1:55432/firstline"),
            max_connections: 10,
            connect_timeout_secs: 5,
        }
    }
}

/// Temporal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TemporalSettings {
    /// Frontend gRPC address, e.g. `http://127.0.0.1:7233`.
    pub address: String,
    /// Namespace the rounds run in.
    pub namespace: String,
    /// Task queue of the incident-analysis workers.
    pub task_queue: String,
}

impl Default for TemporalSettings {
    fn default() -> Self {
        Self {
            address: "http://127.0.0.1:7233".into(),
            namespace: "default".into(),
            task_queue: "incident-analysis".into(),
        }
    }
}

/// Kafka (any Kafka-protocol broker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaSettings {
    /// Bootstrap servers, comma-separated `host:port`.
    pub brokers: String,
    /// Topic every recorded Slack message is published to.
    pub topic: String,
}

impl Default for KafkaSettings {
    fn default() -> Self {
        Self {
            brokers: "127.0.0.1:9092".into(),
            topic: "firstline.messages".into(),
        }
    }
}

/// The embedded stack of `firstline dev`. In dev, `database.url`, `temporal.address` and
/// `kafka.brokers` are derived from these ports, so the two can never disagree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DevSettings {
    /// Where the stack keeps its data, logs and pid files.
    pub state_dir: PathBuf,
    /// The tools virtualenv `scripts/setup` creates (Temporal CLI, PostgreSQL, broker).
    pub tools_dir: PathBuf,
    /// PostgreSQL port on 127.0.0.1 (0 picks a free port).
    pub postgres_port: u16,
    /// Temporal frontend gRPC port on 127.0.0.1 (0 picks a free port).
    pub temporal_port: u16,
    /// Kafka broker port on 127.0.0.1 (0 picks a free port).
    pub kafka_port: u16,
    /// Unprivileged system user PostgreSQL runs as when `firstline dev` runs as root.
    pub postgres_os_user: String,
    /// Seconds each service may take to become ready.
    pub ready_timeout_secs: u64,
    /// Crash-safe stack (fsync on, Temporal on a file). `false` trades that for speed: Postgres
    /// without fsync and Temporal in memory, for throwaway stacks such as the test suite's.
    pub durable: bool,
}

impl Default for DevSettings {
    fn default() -> Self {
        Self {
            state_dir: ".firstline".into(),
            tools_dir: ".tools".into(),
            postgres_port: 55432,
            temporal_port: 7233,
            kafka_port: 9092,
            postgres_os_user: "firstline".into(),
            ready_timeout_secs: 60,
            durable: true,
        }
    }
}

/// Log output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// `tracing` filter directives, e.g. `info,firstline=debug` (`RUST_LOG` wins when set).
    pub filter: String,
    /// `text` for people, `json` for log pipelines.
    pub format: LogFormat,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            filter: "info,sqlx=warn".into(),
            format: LogFormat::Text,
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
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
                        keys.push((
                            format!("{section}.{field}"),
                            format!(
                                "{}{}__{}",
                                crate::ENV_PREFIX,
                                section.to_uppercase(),
                                field.to_uppercase()
                            ),
                        ));
                    }
                }
            }
        }
        keys
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let url = self.database.url.expose();
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(ConfigError::Rejected {
                setting: "database.url",
                env: "FIRSTLINE_DATABASE__URL",
                reason: "must start with postgres:// or postgresql://".into(),
            });
        }
        if self.database.max_connections == 0 {
            return Err(ConfigError::Rejected {
                setting: "database.max_connections",
                env: "FIRSTLINE_DATABASE__MAX_CONNECTIONS",
                reason: "must be at least 1".into(),
            });
        }
        if !(self.temporal.address.starts_with("http://")
            || self.temporal.address.starts_with("https://"))
        {
            return Err(ConfigError::Rejected {
                setting: "temporal.address",
                env: "FIRSTLINE_TEMPORAL__ADDRESS",
                reason: "must be an http:// or https:// URL".into(),
            });
        }
        if self.temporal.task_queue.trim().is_empty() {
            return Err(ConfigError::Rejected {
                setting: "temporal.task_queue",
                env: "FIRSTLINE_TEMPORAL__TASK_QUEUE",
                reason: "must not be empty".into(),
            });
        }
        if self.kafka.brokers.trim().is_empty() {
            return Err(ConfigError::Rejected {
                setting: "kafka.brokers",
                env: "FIRSTLINE_KAFKA__BROKERS",
                reason: "must list at least one host:port".into(),
            });
        }
        if self.dev.ready_timeout_secs == 0 {
            return Err(ConfigError::Rejected {
                setting: "dev.ready_timeout_secs",
                env: "FIRSTLINE_DEV__READY_TIMEOUT_SECS",
                reason: "must be at least 1".into(),
            });
        }
        Ok(())
    }
}
