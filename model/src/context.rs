//! What a round knows of its thread when it starts: earlier rounds, open questions, people's
//! answers and the conversation. The worker's `load_context` builds it from Postgres; the
//! workflow carries it to `run_graph`; the investigation reads it.

use serde::{Deserialize, Serialize};

use crate::question::Question;

/// What the thread already knows when a round starts. Empty for the first round; the round
/// workflow's `load_context` fills it from Postgres for later rounds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadContext {
    /// The Slack workspace (team) the thread is in; recall is scoped to it. `None` disables
    /// recall ("memory unavailable").
    pub team_id: Option<String>,
    /// Earlier rounds in this thread, oldest first.
    pub earlier_rounds: Vec<EarlierRound>,
    /// The questions the last round asked, when it was not grounded: replies since answer them.
    pub open_questions: Vec<Question>,
    /// Replies people wrote in the thread since the bot asked (untrusted text).
    pub human_answers: Vec<HumanAnswer>,
    /// The thread's conversation, oldest first, compacted to a character budget (the most
    /// recent messages are kept); chatter included, redacted.
    pub conversation: Vec<ConversationMessage>,
}

/// One message of the thread's conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationMessage {
    /// Slack user or bot id.
    pub author: String,
    /// `alert`, `mention`, `chatter` or `bot_echo`.
    pub kind: String,
    /// What was written (untrusted, redacted).
    pub text: String,
    /// Slack message ts.
    pub ts: String,
}

impl ThreadContext {
    /// Context for a thread in workspace `team_id` with no history.
    pub fn for_team(team_id: impl Into<String>) -> Self {
        Self {
            team_id: Some(team_id.into()),
            ..Self::default()
        }
    }
}

/// A round already done in this thread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EarlierRound {
    /// 1-based round number.
    pub number: u32,
    /// Its report's headline and causes, as posted.
    pub summary: String,
    /// Whether it was grounded.
    pub grounded: bool,
    /// The questions it asked.
    pub questions: Vec<Question>,
}

/// A human reply in the thread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HumanAnswer {
    /// Slack user id.
    pub user: String,
    /// What they wrote.
    pub text: String,
    /// Slack message ts.
    pub ts: String,
    /// The question it answers, by index among the last round's, when it is a click on that
    /// question's choices; a reply in words says nothing of which.
    #[serde(default)]
    pub question: Option<u32>,
}
