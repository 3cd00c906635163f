//! The `[dev]` section: the embedded stack `firstline dev` runs on one machine.

use super::check;
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
    /// Where the lab's scenarios are (the lab MCP server serves one when `mcp.servers` is empty).
    pub lab_dir: PathBuf,
    /// The lab scenario `firstline dev` serves over MCP (and posts with `--demo`).
    pub lab_scenario: String,
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
            lab_dir: "lab/scenarios".into(),
            lab_scenario: "crashloop-config-exit-78".into(),
        }
    }
}

impl DevSettings {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        check::at_least_one(&[("dev.ready_timeout_secs", self.ready_timeout_secs)])
    }
}
