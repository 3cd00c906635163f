//! The round's activities (DESIGN §4): what the `incident_round` workflow (crate
//! `firstline-workflows`) runs on a worker, one Temporal activity each.
//!
//! - [`context`]: `load_context` — the thread rebuilt from Postgres, the guards' inputs and the
//!   limits the workflow applies (invariant 1: a cold start sees everything).
//! - [`graph_run`]: `run_graph` — the incident graph, checkpointed in Postgres after every
//!   super-step and resumed from there on retry, heartbeating once per step (invariant 11).
//! - [`commit`]: `commit_round` — round, evidence, claims and usage in one transaction,
//!   idempotent on (thread, round).
//! - [`post`] and [`blocks`]: `post_to_thread` — the Block Kit reply, posted once whatever
//!   fails (the posted ts is stored; a retry finds its own message by metadata).
//! - [`activities`]: the Temporal bindings (`#[activities]`), names fixed on the wire.
//! - [`types`]: the payloads the workflow and the activities exchange — small by design: the
//!   graph's state stays in Postgres, never in workflow history.
//! - [`faults`]: named pause points for the crash tests (the `fail` crate, off unless the
//!   `FAILPOINTS` environment variable sets one).

pub mod activities;
pub mod blocks;
pub mod commit;
pub mod context;
pub mod faults;
pub mod graph_run;
pub mod post;
pub mod types;

pub use activities::{RoundActivities, RoundDeps};
pub use types::*;

/// Activity names on the wire.
pub mod names {
    pub const LOAD_CONTEXT: &str = "load_context";
    pub const RUN_GRAPH: &str = "run_graph";
    pub const COMMIT_ROUND: &str = "commit_round";
    pub const POST_TO_THREAD: &str = "post_to_thread";
    pub const POST_FAILURE: &str = "post_failure";
}

/// Errors of the round's activities. Which ones are worth retrying is [`RoundError::retryable`].
#[derive(Debug, thiserror::Error)]
pub enum RoundError {
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("thread {0} is not recorded")]
    UnknownThread(String),
    #[error("round {round} of thread {thread_id} has no finished graph run to commit")]
    NotRun { thread_id: i64, round: u32 },
    #[error("round {round} of thread {thread_id} is not committed")]
    NotCommitted { thread_id: i64, round: u32 },
    #[error("stored checkpoint of thread {thread_id} round {round} is unreadable: {error}")]
    BadCheckpoint {
        thread_id: i64,
        round: u32,
        error: serde_json::Error,
    },
    #[error("incident graph: {message}")]
    Graph { message: String, retryable: bool },
    #[error("attempt {attempt} of round {round} was superseded by a later attempt")]
    Superseded { round: u32, attempt: u32 },
    #[error("another attempt is posting round {round} right now")]
    PostInProgress { round: u32 },
    #[error("slack: {0}")]
    Slack(#[from] firstline_bot::slack::SlackApiError),
    #[error("cancelled")]
    Cancelled,
}

impl RoundError {
    /// Whether another attempt could succeed. Missing rows and unreadable checkpoints will not
    /// mend themselves; a database, Slack or graph failure may.
    pub fn retryable(&self) -> bool {
        match self {
            RoundError::UnknownThread(_)
            | RoundError::NotRun { .. }
            | RoundError::NotCommitted { .. }
            | RoundError::BadCheckpoint { .. }
            | RoundError::Superseded { .. } => false,
            RoundError::Graph { retryable, .. } => *retryable,
            RoundError::Slack(e) => slack_retryable(e),
            RoundError::Database(e) => !matches!(
                e,
                sqlx::Error::Database(db) if db.constraint().is_some()
            ),
            RoundError::PostInProgress { .. } | RoundError::Cancelled => true,
        }
    }
}

/// Slack errors another attempt will not fix: the request or the workspace is wrong.
fn slack_retryable(error: &firstline_bot::slack::SlackApiError) -> bool {
    use firstline_bot::slack::SlackApiError;
    const PERMANENT: &[&str] = &[
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "missing_scope",
        "invalid_blocks",
        "invalid_metadata_format",
        "msg_too_long",
        "no_text",
    ];
    match error {
        SlackApiError::Api { code, .. } => !PERMANENT.contains(&code.as_str()),
        SlackApiError::Invalid { .. } | SlackApiError::MissingField { .. } => false,
        _ => true,
    }
}
