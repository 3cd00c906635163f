//! Per-node policy: a timeout per attempt and a retry policy.
//!
//! Each node runs as a sequence of *attempts*. An attempt fails when the node returns an error,
//! panics, or outlives its timeout. A failed attempt is retried, after an exponential backoff,
//! while attempts remain and the retry predicate accepts the failure. When a node finally fails,
//! the runtime cancels the other nodes still running in that super-step and the run returns an
//! error naming the node (see [`GraphError::NodeFailed`](crate::GraphError::NodeFailed)).
//!
//! Backoff has no jitter: the runtime stays deterministic, which the tests rely on.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The error type nodes return. Anything implementing `std::error::Error` converts with `?`,
/// and so do `&str` and `String`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why one attempt of a node failed.
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    /// The node returned an error.
    #[error("{0}")]
    Failed(BoxError),
    /// The attempt outlived the node's timeout and was cancelled.
    #[error("timed out after {0:?}")]
    TimedOut(Duration),
    /// The node panicked; the payload's message, when it was a string.
    #[error("panicked: {0}")]
    Panicked(String),
}

type RetryPredicate = Arc<dyn Fn(&AttemptError) -> bool + Send + Sync>;

/// How often and how patiently a node is retried.
///
/// The delay before attempt `n + 1` is `initial_backoff * multiplier^(n - 1)`, capped at
/// `max_backoff`. By default every error and timeout is retried, a panic is not.
#[derive(Clone)]
pub struct RetryPolicy {
    /// Total attempts, the first included; `1` means no retry. `0` is treated as `1`.
    pub max_attempts: u32,
    /// The delay before the second attempt.
    pub initial_backoff: Duration,
    /// Factor applied to the delay after each retry.
    pub multiplier: f64,
    /// Upper bound of any one delay.
    pub max_backoff: Duration,
    retry_on: Option<RetryPredicate>,
}

impl RetryPolicy {
    /// No retry: one attempt.
    pub fn none() -> Self {
        Self::attempts(1)
    }

    /// `max_attempts` attempts with LangGraph's backoff defaults (0.5 s, ×2, at most 128 s).
    pub fn attempts(max_attempts: u32) -> Self {
        Self {
            max_attempts,
            initial_backoff: Duration::from_millis(500),
            multiplier: 2.0,
            max_backoff: Duration::from_secs(128),
            retry_on: None,
        }
    }

    /// Sets the exponential backoff: first delay, growth factor and cap.
    #[must_use]
    pub fn backoff(mut self, initial: Duration, multiplier: f64, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.multiplier = multiplier;
        self.max_backoff = max;
        self
    }

    /// Retries only the failures for which `predicate` returns true.
    #[must_use]
    pub fn retry_on(
        mut self,
        predicate: impl Fn(&AttemptError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_on = Some(Arc::new(predicate));
        self
    }

    /// Whether `error`, the failure of attempt number `attempt` (from 1), gets another attempt.
    pub fn should_retry(&self, attempt: u32, error: &AttemptError) -> bool {
        if attempt >= self.max_attempts {
            return false;
        }
        match &self.retry_on {
            Some(predicate) => predicate(error),
            None => !matches!(error, AttemptError::Panicked(_)),
        }
    }

    /// The delay after failed attempt number `attempt` (from 1).
    pub fn delay_after(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(1).min(64) as i32;
        let factor = self.multiplier.max(0.0).powi(exponent);
        let secs = self.initial_backoff.as_secs_f64() * factor;
        if !secs.is_finite() || secs >= self.max_backoff.as_secs_f64() {
            self.max_backoff
        } else {
            Duration::from_secs_f64(secs)
        }
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::none()
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("initial_backoff", &self.initial_backoff)
            .field("multiplier", &self.multiplier)
            .field("max_backoff", &self.max_backoff)
            .field("retry_on", &self.retry_on.as_ref().map(|_| "<predicate>"))
            .finish()
    }
}

/// A node's policy: timeout per attempt and retries. The default is no timeout, one attempt.
#[derive(Clone, Debug, Default)]
pub struct NodePolicy {
    /// Limit of one attempt; `None` waits forever.
    pub timeout: Option<Duration>,
    /// What to do when an attempt fails.
    pub retry: RetryPolicy,
}

impl NodePolicy {
    /// The default policy: no timeout, no retry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels an attempt that runs longer than `timeout`.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the retry policy.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy::attempts(6).backoff(
            Duration::from_millis(100),
            2.0,
            Duration::from_millis(250),
        );
        let delays: Vec<_> = (1..=4).map(|a| p.delay_after(a).as_millis()).collect();
        assert_eq!(delays, [100, 200, 250, 250]);
    }

    #[test]
    fn predicate_and_attempts_decide_retry() {
        let p = RetryPolicy::attempts(3).retry_on(|e| matches!(e, AttemptError::TimedOut(_)));
        let timeout = AttemptError::TimedOut(Duration::from_secs(1));
        let failed = AttemptError::Failed("boom".into());
        assert!(p.should_retry(1, &timeout));
        assert!(p.should_retry(2, &timeout));
        assert!(!p.should_retry(3, &timeout));
        assert!(!p.should_retry(1, &failed));
        let default = RetryPolicy::attempts(3);
        assert!(default.should_retry(1, &failed));
        assert!(!default.should_retry(1, &AttemptError::Panicked("x".into())));
    }
}
