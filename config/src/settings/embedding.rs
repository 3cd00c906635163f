//! The `[embedding]` section (the model that turns text into vectors for recall by meaning) and
//! the `[embedder]` section (the process that reads the message topic and writes the vectors).
//!
//! An empty `embedding.base_url` means the local model, all-MiniLM-L6-v2, run in-process from
//! the files `scripts/setup` installs; a URL means any OpenAI-compatible `/v1/embeddings`.

use super::check;
use crate::{ConfigError, SecretString};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The model's name when `embedding.model` is empty and the local model is used.
pub const LOCAL_EMBEDDING_MODEL: &str = "all-MiniLM-L6-v2";

/// Which embedding model, and where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingSettings {
    /// OpenAI-compatible API base for `/embeddings` (e.g. `https://api.openai.com/v1`); empty:
    /// the local all-MiniLM-L6-v2.
    pub base_url: String,
    /// Model name: required with `base_url`; with the local model, empty or `all-MiniLM-L6-v2`.
    pub model: String,
    /// Bearer token for the endpoint; empty sends none.
    pub api_key: SecretString,
    /// Length of the model's vectors; must equal the database column's (384), checked at start.
    pub dimensions: u32,
    /// Directory of the local model's files (config.json, vocab.txt, model.safetensors); empty:
    /// the copy `scripts/setup` installs in the tools virtualenv under `dev.tools_dir`.
    pub model_dir: PathBuf,
    /// Texts per model call.
    pub batch_size: usize,
    /// Seconds one call to the endpoint may take, connect to last byte.
    pub request_timeout_secs: u64,
}

impl Default for EmbeddingSettings {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            model: String::new(),
            api_key: SecretString::default(),
            dimensions: 384,
            model_dir: PathBuf::new(),
            batch_size: 32,
            request_timeout_secs: 30,
        }
    }
}

impl EmbeddingSettings {
    /// Whether an endpoint (rather than the local model) embeds.
    pub fn remote(&self) -> bool {
        !self.base_url.trim().is_empty()
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        check::at_least_one(&[
            ("embedding.dimensions", u64::from(self.dimensions)),
            ("embedding.batch_size", self.batch_size as u64),
            ("embedding.request_timeout_secs", self.request_timeout_secs),
        ])?;
        if self.remote() {
            check::http_url("embedding.base_url", self.base_url.trim())?;
            if self.model.trim().is_empty() {
                return Err(ConfigError::rejected(
                    "embedding.model",
                    "must name a model when embedding.base_url is set",
                ));
            }
        } else if !self.model.trim().is_empty() && self.model.trim() != LOCAL_EMBEDDING_MODEL {
            return Err(ConfigError::rejected(
                "embedding.model",
                format!(
                    "the local embedder runs {LOCAL_EMBEDDING_MODEL} only; set embedding.base_url \
                     to use `{}`",
                    self.model.trim()
                ),
            ));
        }
        Ok(())
    }
}

/// The embedder process: its consumer group, batching and health endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbedderSettings {
    /// Address `/healthz` and `/metrics` listen on.
    pub listen: String,
    /// Kafka consumer group (one group: every record is embedded by one member).
    pub group_id: String,
    /// Static group membership (`group.instance.id`), e.g. a StatefulSet pod's name: a member
    /// restarted under the same id resumes its partitions at once. Empty: dynamic membership.
    pub instance_id: String,
    /// Records read ahead of the model at most (the bounded queue between consumer and model).
    pub queue_capacity: usize,
    /// Records embedded and written per batch at most.
    pub batch_max: usize,
    /// Milliseconds a batch waits to fill before it is embedded anyway.
    pub batch_wait_ms: u64,
    /// First wait before retrying a failed write or model call (doubles per attempt).
    pub retry_initial_ms: u64,
    /// Longest wait between retries.
    pub retry_max_secs: u64,
    /// Seconds a stopping embedder may take to finish its batch and commit.
    pub shutdown_grace_secs: u64,
}

impl Default for EmbedderSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:3002".into(),
            group_id: "firstline-embedder".into(),
            instance_id: String::new(),
            queue_capacity: 1024,
            batch_max: 64,
            batch_wait_ms: 200,
            retry_initial_ms: 200,
            retry_max_secs: 30,
            shutdown_grace_secs: 20,
        }
    }
}

impl EmbedderSettings {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        check::socket_addr("embedder.listen", &self.listen)?;
        if self.group_id.trim().is_empty() {
            return Err(ConfigError::rejected(
                "embedder.group_id",
                "must name a consumer group",
            ));
        }
        check::at_least_one(&[
            ("embedder.queue_capacity", self.queue_capacity as u64),
            ("embedder.batch_max", self.batch_max as u64),
            ("embedder.batch_wait_ms", self.batch_wait_ms),
            ("embedder.retry_initial_ms", self.retry_initial_ms),
            ("embedder.retry_max_secs", self.retry_max_secs),
            ("embedder.shutdown_grace_secs", self.shutdown_grace_secs),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::{EmbedderSettings, EmbeddingSettings};
    use crate::ConfigError;

    fn rejected(result: Result<(), ConfigError>) -> &'static str {
        match result {
            Err(ConfigError::Rejected { setting, .. }) => setting,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_the_local_model_and_valid() {
        let embedding = EmbeddingSettings::default();
        assert!(!embedding.remote());
        assert_eq!(embedding.dimensions, 384);
        embedding.validate().expect("valid");
        EmbedderSettings::default().validate().expect("valid");
    }

    #[test]
    fn an_endpoint_needs_a_model_and_the_local_model_is_only_minilm() {
        let remote = EmbeddingSettings {
            base_url: "http://127.0.0.1:8080/v1".into(),
            ..EmbeddingSettings::default()
        };
        assert_eq!(rejected(remote.validate()), "embedding.model");
        let wrong_local = EmbeddingSettings {
            model: "bge-small".into(),
            ..EmbeddingSettings::default()
        };
        assert_eq!(rejected(wrong_local.validate()), "embedding.model");
        let not_url = EmbeddingSettings {
            base_url: "localhost:8080".into(),
            model: "m".into(),
            ..EmbeddingSettings::default()
        };
        assert_eq!(rejected(not_url.validate()), "embedding.base_url");
        let zero = EmbedderSettings {
            batch_max: 0,
            ..EmbedderSettings::default()
        };
        assert_eq!(rejected(zero.validate()), "embedder.batch_max");
    }
}
