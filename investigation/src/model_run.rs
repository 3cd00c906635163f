//! What the model path did in one round, as the round keeps it.

use firstline_llm::LlmError;
use serde::{Deserialize, Serialize};

use crate::report::UnsupportedClaim;

/// The `ModelRun::fallback` of a heartbeat alert: not a failure, nothing to do.
pub const HEARTBEAT: &str = "heartbeat";

/// What the model path did in one round: stored on the round, counted in `/metrics`, and, when
/// the model was not used, said in one line of the post.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRun {
    /// The model asked.
    pub model: String,
    /// Why the round fell back to the deterministic path (`LlmError::reason`), if it did.
    pub fallback: Option<String>,
    /// The error behind the fallback, in words (never a secret).
    pub detail: Option<String>,
    pub model_calls: u32,
    /// Tool calls the model made.
    pub tool_calls: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Time spent waiting for the model (cached answers cost none).
    pub latency_ms: u64,
    /// Model claims the quote check rejected, with why.
    pub dropped_claims: Vec<UnsupportedClaim>,
    /// The model's verdict asked the thread instead of posting.
    pub asked: bool,
}

impl ModelRun {
    /// The model's work was used.
    pub fn used(&self) -> bool {
        self.fallback.is_none()
    }

    /// The post's one line about the model: what it did, or that it was not used and why.
    pub fn note(&self) -> String {
        match &self.fallback {
            Some(reason) => format!(
                "The model ({}) was not used: {}.",
                self.model,
                fallback_words(reason)
            ),
            None => {
                let dropped = match self.dropped_claims.len() {
                    0 => String::new(),
                    1 => "; 1 claim it made was dropped (not in the evidence it cited)".to_string(),
                    n => format!(
                        "; {n} claims it made were dropped (not in the evidence they cited)"
                    ),
                };
                format!(
                    "Reviewed by {} ({} model calls, {} tool calls{dropped}).",
                    self.model, self.model_calls, self.tool_calls
                )
            }
        }
    }
}

fn fallback_words(reason: &str) -> &'static str {
    if reason == HEARTBEAT {
        return "a heartbeat needs none";
    }
    LlmError::reason_in_words(reason).unwrap_or("it failed")
}
