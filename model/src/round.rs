//! What wakes a round: the `incident_round` workflow's input and its `mention` signal. The bot's
//! relay sends them (signal-with-start); the workflow receives them.

use serde::{Deserialize, Serialize};

use crate::ThreadKey;

/// The `incident_round` workflow's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trigger {
    /// The thread the round is about.
    pub thread: ThreadKey,
}

/// The `mention` signal. Alerts send it too, with the integration as the user, so a round always
/// learns what woke it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MentionSignal {
    /// Who: a user id, or for an alert the bot id / username.
    pub user: String,
    /// The message text.
    pub text: String,
    /// The message ts (for a click on a question's choice: the action's ts, no message's).
    pub ts: String,
    /// A click, not a message: there is nothing to react to.
    #[serde(default)]
    pub clicked: bool,
}
