//! The `[temporal]` section: the Temporal cluster incident rounds run on.

use super::check;
use crate::ConfigError;
use serde::{Deserialize, Serialize};

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

impl TemporalSettings {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        check::http_url("temporal.address", &self.address)?;
        if self.task_queue.trim().is_empty() {
            return Err(ConfigError::rejected(
                "temporal.task_queue",
                "must not be empty",
            ));
        }
        Ok(())
    }
}
