//! The `[kafka]` section: the Kafka-protocol broker every recorded message is published to.

use crate::ConfigError;
use serde::{Deserialize, Serialize};

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

impl KafkaSettings {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if self.brokers.trim().is_empty() {
            return Err(ConfigError::rejected(
                "kafka.brokers",
                "must list at least one host:port",
            ));
        }
        Ok(())
    }
}
