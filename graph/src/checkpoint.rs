//! Checkpoints: everything needed to continue a run on another process.
//!
//! After every super-step the run is fully described by the state, the nodes due to run next,
//! the progress of each join (which of its sources have arrived) and the step number. When a
//! step fails, the writes of the nodes of that step that did succeed are kept as *pending
//! writes*: resuming uses them instead of running those nodes again, so a retried job only
//! re-runs what failed. A checkpoint is `serde` serialisable whenever the state and its update
//! are, so it can be stored (e.g. as JSON in Postgres) between attempts.

use serde::{Deserialize, Serialize};

use crate::state::State;

/// A resumable snapshot of a run, taken between super-steps.
#[derive(Clone, Serialize, Deserialize)]
#[serde(bound(
    serialize = "S: Serialize, S::Update: Serialize",
    deserialize = "S: Deserialize<'de>, S::Update: Deserialize<'de>"
))]
pub struct Checkpoint<S: State> {
    /// Super-steps completed so far (they count against the recursion limit on resume).
    pub step: usize,
    /// The state after `step` steps.
    pub state: S,
    /// The nodes of the next super-step, in name order; empty when the run is finished.
    pub next: Vec<String>,
    /// Joins with some, but not all, of their sources arrived.
    pub joins: Vec<JoinProgress>,
    /// Writes of nodes of step `step + 1` that already succeeded (after a failed step).
    pub pending_writes: Vec<PendingWrite<S::Update>>,
}

impl<S: State> Checkpoint<S> {
    /// True when nothing is left to run.
    pub fn is_finished(&self) -> bool {
        self.next.is_empty()
    }
}

impl<S> std::fmt::Debug for Checkpoint<S>
where
    S: State + std::fmt::Debug,
    S::Update: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("step", &self.step)
            .field("state", &self.state)
            .field("next", &self.next)
            .field("joins", &self.joins)
            .field("pending_writes", &self.pending_writes)
            .finish()
    }
}

/// The progress of one join `[from...] → to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinProgress {
    /// The join's sources.
    pub from: Vec<String>,
    /// The join's target.
    pub to: String,
    /// The sources that have finished since the target last ran.
    pub arrived: Vec<String>,
}

/// A succeeded node's update, kept because a sibling in its step failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingWrite<U> {
    /// The node that wrote it.
    pub node: String,
    /// Its update.
    pub update: U,
}
