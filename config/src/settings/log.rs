//! The `[log]` section: what is logged and in which format.

use serde::{Deserialize, Serialize};

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
            filter: "warn,firstline=info".into(),
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
