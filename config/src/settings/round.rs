//! The `[round]` section: the bounds on the per-thread round workflow.

use super::check;
use crate::ConfigError;
use firstline_model::limits;
use serde::{Deserialize, Serialize};

/// The round workflow's limits. Every loop and wait of a round is bounded by one of these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoundSettings {
    /// Most rounds one thread gets; a mention after that is recorded and not answered.
    pub max_rounds: u32,
    /// Seconds after the thread's first message (its `thread_ts`) when no round starts any more.
    pub max_thread_age_secs: u64,
    /// Seconds a run waits for a new mention after asking before it closes.
    pub idle_timeout_secs: u64,
    /// Seconds `run_graph` may take per attempt (start-to-close).
    pub run_graph_timeout_secs: u64,
    /// Seconds without a heartbeat after which `run_graph` is retried on another worker.
    pub run_graph_heartbeat_secs: u64,
    /// Seconds `load_context`, `commit_round` and `post_to_thread` may take per attempt.
    pub activity_timeout_secs: u64,
    /// Attempts per activity (the first included) before the round fails.
    pub activity_attempts: u32,
    /// First retry delay of a failed activity, in milliseconds (doubles per attempt).
    pub retry_initial_ms: u64,
    /// Cap on an activity's retry delay, in seconds.
    pub retry_max_secs: u64,
    /// Characters of thread conversation a round reads (most recent first).
    pub context_chars: usize,
    /// Tool calls one round's investigation may make (the evidence plan stops there).
    pub max_tool_calls: u32,
    /// Seconds one round's investigation may spend gathering evidence.
    pub investigate_secs: u64,
    /// The workspace's time zone (an IANA name, `Europe/Berlin`): how a time people write in an
    /// answer ("since 14:05") is read.
    pub time_zone: String,
}

impl Default for RoundSettings {
    fn default() -> Self {
        Self {
            max_rounds: limits::MAX_ROUNDS,
            max_thread_age_secs: limits::MAX_THREAD_AGE_SECS,
            idle_timeout_secs: limits::IDLE_TIMEOUT_SECS,
            run_graph_timeout_secs: limits::RUN_GRAPH_TIMEOUT_SECS,
            run_graph_heartbeat_secs: limits::RUN_GRAPH_HEARTBEAT_SECS,
            activity_timeout_secs: limits::ACTIVITY_TIMEOUT_SECS,
            activity_attempts: limits::ACTIVITY_ATTEMPTS,
            retry_initial_ms: limits::RETRY_INITIAL_MS,
            retry_max_secs: limits::RETRY_MAX_SECS,
            context_chars: limits::CONTEXT_CHARS,
            max_tool_calls: limits::MAX_TOOL_CALLS,
            investigate_secs: limits::INVESTIGATE_SECS,
            time_zone: "UTC".to_string(),
        }
    }
}

impl RoundSettings {
    /// [`Self::time_zone`], parsed (checked at load, so UTC only if it was never validated).
    pub fn zone(&self) -> chrono_tz::Tz {
        self.time_zone.parse().unwrap_or(chrono_tz::UTC)
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if self.time_zone.parse::<chrono_tz::Tz>().is_err() {
            return Err(ConfigError::rejected(
                "round.time_zone",
                format!("`{}` is not an IANA time zone name", self.time_zone),
            ));
        }
        check::at_least_one(&[
            ("round.max_rounds", u64::from(self.max_rounds)),
            ("round.max_thread_age_secs", self.max_thread_age_secs),
            ("round.idle_timeout_secs", self.idle_timeout_secs),
            ("round.run_graph_timeout_secs", self.run_graph_timeout_secs),
            (
                "round.run_graph_heartbeat_secs",
                self.run_graph_heartbeat_secs,
            ),
            ("round.activity_timeout_secs", self.activity_timeout_secs),
            ("round.activity_attempts", u64::from(self.activity_attempts)),
            ("round.retry_initial_ms", self.retry_initial_ms),
            ("round.retry_max_secs", self.retry_max_secs),
            ("round.max_tool_calls", u64::from(self.max_tool_calls)),
            ("round.investigate_secs", self.investigate_secs),
        ])?;
        // The investigation runs inside one `run_graph` attempt.
        if self.investigate_secs >= self.run_graph_timeout_secs {
            return Err(ConfigError::rejected(
                "round.investigate_secs",
                "must be shorter than round.run_graph_timeout_secs",
            ));
        }
        // A heartbeat window as long as the attempt itself could never notice a dead worker.
        if self.run_graph_heartbeat_secs >= self.run_graph_timeout_secs {
            return Err(ConfigError::rejected(
                "round.run_graph_heartbeat_secs",
                "must be shorter than round.run_graph_timeout_secs",
            ));
        }
        Ok(())
    }
}
