//! The `[worker]` section: the process that runs rounds.

use super::check;
use crate::ConfigError;
use serde::{Deserialize, Serialize};

/// The worker process (`firstline worker`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSettings {
    /// Address `/healthz` and `/metrics` listen on.
    pub listen: String,
    /// Activities (graph runs, commits, posts) one worker runs at once.
    pub max_concurrent_activities: usize,
    /// Workflow tasks one worker processes at once.
    pub max_concurrent_workflow_tasks: usize,
    /// Seconds in-flight activities get to finish after SIGTERM before they are cancelled and
    /// handed back (keep it below the pod's termination grace period).
    pub shutdown_grace_secs: u64,
    /// Seconds a round's next workflow task waits for the worker that ran its last one before
    /// any worker may take it: a lost worker delays its rounds by this.
    pub sticky_timeout_secs: u64,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:3001".into(),
            max_concurrent_activities: 20,
            max_concurrent_workflow_tasks: 20,
            shutdown_grace_secs: 20,
            sticky_timeout_secs: 5,
        }
    }
}

impl WorkerSettings {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        check::socket_addr("worker.listen", &self.listen)?;
        check::at_least_one(&[
            (
                "worker.max_concurrent_activities",
                self.max_concurrent_activities as u64,
            ),
            (
                "worker.max_concurrent_workflow_tasks",
                self.max_concurrent_workflow_tasks as u64,
            ),
            ("worker.sticky_timeout_secs", self.sticky_timeout_secs),
        ])
    }
}
