//! What can go wrong asking a model, each with a stable machine-readable reason.
//!
//! [`LlmError::reason`] is what a round records as its "fallback reason" and what `/metrics`
//! labels by, so its strings never change. Messages never contain the API key: every detail that
//! came from outside is redacted (see `failure.rs`) before it lands here.

use std::time::Duration;

/// Which per-round budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetLimit {
    /// The round made its last allowed model call.
    ModelCalls,
    /// The round made its last allowed tool call.
    ToolCalls,
    /// Prompt plus completion tokens reached the round's cap.
    Tokens,
    /// The round's wall-time budget is spent.
    WallTime,
}

impl BudgetLimit {
    /// A stable name, e.g. `model_calls`.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetLimit::ModelCalls => "model_calls",
            BudgetLimit::ToolCalls => "tool_calls",
            BudgetLimit::Tokens => "tokens",
            BudgetLimit::WallTime => "wall_time",
        }
    }
}

impl std::fmt::Display for BudgetLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a model answer is not available (or not usable).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The client options make no sense (no base URL, no model, a key that is not a header).
    #[error("model client misconfigured: {0}")]
    Config(String),
    /// No answer within the request timeout (or before the round's deadline).
    #[error("the model did not answer within {}s", .after.as_secs_f32())]
    Timeout {
        /// How long the last attempt waited.
        after: Duration,
    },
    /// HTTP 429 on every attempt.
    #[error("the model endpoint rate-limited us (HTTP 429) on {attempts} attempt(s): {detail}")]
    RateLimited {
        /// Requests sent.
        attempts: u32,
        /// The endpoint's message, shortened.
        detail: String,
    },
    /// HTTP 5xx on every attempt.
    #[error("the model endpoint failed (HTTP {status}) on {attempts} attempt(s): {detail}")]
    Server {
        /// The last status.
        status: u16,
        /// Requests sent.
        attempts: u32,
        /// The endpoint's message, shortened.
        detail: String,
    },
    /// Any other non-success status (4xx except 429): never retried.
    #[error("the model endpoint refused the request (HTTP {status}): {detail}")]
    Http {
        /// The status.
        status: u16,
        /// The endpoint's message, shortened.
        detail: String,
    },
    /// The endpoint could not be reached on any attempt.
    #[error("cannot connect to the model endpoint after {attempts} attempt(s): {detail}")]
    Connect {
        /// Connection attempts made.
        attempts: u32,
        /// What the transport said.
        detail: String,
    },
    /// The connection broke after the request was sent (not retried: it may have been served).
    #[error("the model request failed in transit: {0}")]
    Transport(String),
    /// The response body, or the content asked to be JSON, could not be decoded.
    #[error("the model's answer could not be decoded: {0}")]
    Unparsable(String),
    /// The content is JSON but not of the asked-for shape.
    #[error("the model's answer does not match the schema: {0}")]
    SchemaInvalid(String),
    /// The model stopped at its token limit (`finish_reason = length`): the answer is cut off.
    #[error("the model's answer was cut off at its token limit")]
    Length,
    /// The model refused (a `refusal`, or `finish_reason = content_filter`).
    #[error("the model refused: {0}")]
    Refusal(String),
    /// A per-round budget is spent; nothing was sent.
    #[error("the round's model budget is spent ({0})")]
    Budget(BudgetLimit),
}

impl LlmError {
    /// A stable, machine-readable reason: the round's "fallback reason" and the `/metrics` label.
    pub fn reason(&self) -> &'static str {
        match self {
            LlmError::Config(_) => "config",
            LlmError::Timeout { .. } => "timeout",
            LlmError::RateLimited { .. } => "http_429",
            LlmError::Server { .. } => "http_5xx",
            LlmError::Http { .. } => "http_error",
            LlmError::Connect { .. } => "connect",
            LlmError::Transport(_) => "transport",
            LlmError::Unparsable(_) => "unparsable",
            LlmError::SchemaInvalid(_) => "schema_invalid",
            LlmError::Length => "length",
            LlmError::Refusal(_) => "refusal",
            LlmError::Budget(_) => "budget",
        }
    }

    /// What a [`LlmError::reason`] means, in words a reply can carry ("it did not answer in
    /// time"); `None` for a reason this crate never gives.
    pub fn reason_in_words(reason: &str) -> Option<&'static str> {
        Some(match reason {
            "config" => "it is misconfigured",
            "timeout" => "it did not answer in time",
            "http_429" => "it was rate-limited",
            "http_5xx" => "its server kept failing",
            "http_error" => "its server refused the request",
            "connect" => "it could not be reached",
            "transport" => "the connection to it failed",
            "unparsable" => "its answer was not valid JSON",
            "schema_invalid" => "its answer did not match the schema",
            "length" => "its answer was cut off (length)",
            "refusal" => "it refused",
            "budget" => "the round's model budget was spent",
            _ => return None,
        })
    }

    /// Every reason [`LlmError::reason`] can return, for pre-registering metric labels.
    pub const REASONS: &'static [&'static str] = &[
        "config",
        "timeout",
        "http_429",
        "http_5xx",
        "http_error",
        "connect",
        "transport",
        "unparsable",
        "schema_invalid",
        "length",
        "refusal",
        "budget",
    ];
}
