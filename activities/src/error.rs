//! What the round's activities fail with, and which failures are worth another attempt: a missing
//! row or an unreadable checkpoint will not mend itself; a database, Slack or graph failure may.

use firstline_slack::SlackApiError;

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
    #[error("round {round} of thread {thread_id} is not posted yet")]
    NotPosted { thread_id: i64, round: u32 },
    #[error("stored checkpoint of thread {thread_id} round {round} is unreadable: {error}")]
    BadCheckpoint {
        thread_id: i64,
        round: u32,
        error: serde_json::Error,
    },
    #[error("stored result of thread {thread_id} round {round} is unreadable: {error}")]
    BadResult {
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
    Slack(#[from] SlackApiError),
    #[error("cancelled")]
    Cancelled,
    /// A write was sent and no answer came back: the next attempt reads the object to learn
    /// whether it was applied before anything is sent again.
    #[error("action {action_id}: {reason}")]
    WriteUnknown { action_id: i64, reason: String },
    #[error("action {0} does not exist")]
    UnknownAction(i64),
    #[error("action {0} cannot run: actions are off on this worker (actions.enabled)")]
    ActionsOff(i64),
    #[error("thread {0} is linked to no other thread's analysis")]
    NotLinked(i64),
    #[error("stored change of action {action_id} is unreadable: {error}")]
    BadChange {
        action_id: i64,
        error: serde_json::Error,
    },
}

impl RoundError {
    /// Whether another attempt could succeed. Missing rows and unreadable checkpoints will not
    /// mend themselves; a database, Slack or graph failure may.
    pub fn retryable(&self) -> bool {
        match self {
            RoundError::UnknownThread(_)
            | RoundError::NotRun { .. }
            | RoundError::NotCommitted { .. }
            | RoundError::NotPosted { .. }
            | RoundError::BadCheckpoint { .. }
            | RoundError::BadResult { .. }
            | RoundError::Superseded { .. }
            | RoundError::UnknownAction(_)
            | RoundError::ActionsOff(_)
            | RoundError::NotLinked(_)
            | RoundError::BadChange { .. } => false,
            RoundError::Graph { retryable, .. } => *retryable,
            RoundError::Slack(e) => slack_retryable(e),
            RoundError::Database(e) => !matches!(
                e,
                sqlx::Error::Database(db) if db.constraint().is_some()
            ),
            RoundError::PostInProgress { .. }
            | RoundError::Cancelled
            | RoundError::WriteUnknown { .. } => true,
        }
    }
}

/// Slack errors another attempt will not fix: the request or the workspace is wrong.
fn slack_retryable(error: &SlackApiError) -> bool {
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
