//! The plain values a [`crate::Client`] is built from: where the model is and how to retry it.

use std::fmt;
use std::time::Duration;

/// How failed requests are retried: only HTTP 429, 5xx and connect errors, with capped
/// exponential backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Requests sent at most, the first included (`1` = never retry; `0` is treated as `1`).
    pub attempts: u32,
    /// Delay before the first retry; it doubles per retry.
    pub initial_backoff: Duration,
    /// Cap on any one delay (also on a server's `Retry-After`).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(4),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `retry` (1 = the first retry), before any `Retry-After`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }

    /// Requests sent at most (never zero).
    pub fn max_attempts(&self) -> u32 {
        self.attempts.max(1)
    }
}

/// Everything a [`crate::Client`] needs. The API key is never printed by `Debug`.
#[derive(Clone, PartialEq)]
pub struct ClientOptions {
    /// The OpenAI-compatible API base, e.g. `http://127.0.0.1:8080/v1` (the part before
    /// `/chat/completions`).
    pub base_url: String,
    /// Model name sent with every request.
    pub model: String,
    /// Bearer token; `None` sends none (a local server usually wants none).
    pub api_key: Option<String>,
    /// Time limit of one HTTP request, connect to last byte.
    pub timeout: Duration,
    /// Sampling temperature.
    pub temperature: f32,
    /// Which failures are retried, how often and how far apart.
    pub retry: RetryPolicy,
}

impl ClientOptions {
    /// Options with the defaults: 30 s timeout, temperature 0, [`RetryPolicy::default`].
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(30),
            temperature: 0.0,
            retry: RetryPolicy::default(),
        }
    }
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("timeout", &self.timeout)
            .field("temperature", &self.temperature)
            .field("retry", &self.retry)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{ClientOptions, RetryPolicy};
    use std::time::Duration;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy {
            attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
        };
        let delays: Vec<u128> = (1..=5).map(|n| policy.backoff(n).as_millis()).collect();
        assert_eq!(delays, vec![100, 200, 350, 350, 350]);
        assert_eq!(policy.backoff(u32::MAX), Duration::from_millis(350));
        let never = RetryPolicy {
            attempts: 0,
            ..policy
        };
        assert_eq!(never.max_attempts(), 1);
    }

    #[test]
    fn debug_hides_the_key() {
        let mut options = ClientOptions::new("http://x/v1", "m");
        options.api_key = Some("sk-secret".into());
        let shown = format!("{options:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
}
