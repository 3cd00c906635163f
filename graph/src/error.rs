//! Errors: building a graph ([`BuildError`]) and running one ([`GraphError`], carried with the
//! checkpoint to resume from in [`RunError`]).

use std::fmt;

use crate::checkpoint::Checkpoint;
use crate::policy::AttemptError;
use crate::state::State;

/// Why [`GraphBuilder::compile`](crate::GraphBuilder::compile) rejected a graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// Two nodes share a name.
    #[error("duplicate node name `{0}`")]
    DuplicateNode(String),
    /// A node name is empty, reserved (`__start__`, `__end__`, any `__` prefix) or uses
    /// characters other than ASCII letters, digits and `_`.
    #[error("invalid node name `{0}`: use ASCII letters, digits and `_`, not starting with `__`")]
    InvalidName(String),
    /// An edge names a node that was never added.
    #[error("{edge} refers to unknown node `{node}`")]
    UnknownNode {
        /// The missing node.
        node: String,
        /// The edge, described.
        edge: String,
    },
    /// An edge starts at END, ends at START, or has no source or target.
    #[error("invalid edge: {0}")]
    InvalidEdge(String),
    /// Nothing leaves START.
    #[error("no edge leaves START: the graph has no entry point")]
    NoEntry,
    /// No path from START reaches the node.
    #[error("node `{0}` is unreachable from START")]
    Unreachable(String),
    /// No path from the node reaches END (a dead end).
    #[error("node `{0}` has no path to END")]
    NoPathToEnd(String),
}

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// A node failed after its last attempt. Its in-flight siblings were cancelled.
    #[error("node `{node}` failed in step {step} after {attempts} attempt(s): {source}")]
    NodeFailed {
        /// The failed node.
        node: String,
        /// The super-step (from 1).
        step: usize,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's failure.
        #[source]
        source: AttemptError,
    },
    /// Two nodes wrote the same overwrite key in one super-step (LangGraph's
    /// `INVALID_CONCURRENT_GRAPH_UPDATE`). No write of that step was applied.
    #[error(
        "invalid concurrent graph update in step {step}: key `{key}` was written by both \
         `{first}` and `{second}`; an overwrite key takes one write per step \
         (give it an append or fold reducer)"
    )]
    ConcurrentUpdate {
        /// The key.
        key: &'static str,
        /// The first writer in node-name order.
        first: String,
        /// The second writer in node-name order.
        second: String,
        /// The super-step (from 1).
        step: usize,
    },
    /// The run needed more super-steps than the recursion limit. Step `limit + 1` did not run.
    #[error(
        "recursion limit of {limit} super-steps reached without reaching END; \
         the last step ran [{}], and [{}] would have run next",
        .last_ran.join(", "),
        .next.join(", ")
    )]
    RecursionLimit {
        /// The limit.
        limit: usize,
        /// The nodes of the last step that ran.
        last_ran: Vec<String>,
        /// The nodes that would have run next.
        next: Vec<String>,
    },
    /// A router returned a name that is not among its declared targets.
    #[error(
        "the router on node `{node}` returned `{target}`, which is not one of its declared \
         targets [{}]",
        .declared.join(", ")
    )]
    UnknownRoute {
        /// The router's source node.
        node: String,
        /// What it returned.
        target: String,
        /// What it may return.
        declared: Vec<String>,
    },
    /// A checkpoint given to `resume` does not fit this graph.
    #[error("checkpoint does not match this graph: {0}")]
    CheckpointMismatch(String),
}

/// A failed run: the error and, when the run can be resumed, the checkpoint to resume from.
///
/// For [`GraphError::NodeFailed`] the checkpoint is the failed step's starting point with the
/// writes of the siblings that succeeded kept as pending writes, so
/// [`CompiledGraph::resume`](crate::CompiledGraph::resume) re-runs only the nodes that did not
/// finish. For [`GraphError::RecursionLimit`] it is the last completed step (resume it with a
/// higher limit). For the other errors it is the last completed step.
pub struct RunError<S: State> {
    /// What went wrong.
    pub error: GraphError,
    /// Where to resume from; `None` when the run never started (a checkpoint mismatch).
    pub checkpoint: Option<Box<Checkpoint<S>>>,
}

impl<S: State> RunError<S> {
    pub(crate) fn new(error: GraphError, checkpoint: Option<Checkpoint<S>>) -> Self {
        Self {
            error,
            checkpoint: checkpoint.map(Box::new),
        }
    }
}

impl<S: State> fmt::Debug for RunError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunError")
            .field("error", &self.error)
            .field(
                "checkpoint",
                &self
                    .checkpoint
                    .as_ref()
                    .map(|c| format!("<step {}, next {:?}>", c.step, c.next)),
            )
            .finish()
    }
}

impl<S: State> fmt::Display for RunError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<S: State> std::error::Error for RunError<S> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}
