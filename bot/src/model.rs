//! The bot's vocabulary: what kind a message is, which thread it belongs to, and the message as
//! the rest of the pipeline sees it (after classification, before storage).

use serde::{Deserialize, Serialize};

/// What a recorded message is. Only [`Kind::Alert`] and [`Kind::Mention`] wake a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Posted by an integration a configured rule recognises (Alertmanager, Grafana, …).
    Alert,
    /// A person addressed the bot (`app_mention`, or `<@BOT>` in a message).
    Mention,
    /// People talking in a channel or thread; recorded, never answered.
    Chatter,
    /// Firstline's own messages and bots no alert rule matches; never trigger anything.
    BotEcho,
    /// An edit of an earlier message (`message_changed`, `message_replied`).
    Edit,
    /// A deletion (`message_deleted`).
    Deletion,
}

impl Kind {
    /// The value stored in `messages.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Alert => "alert",
            Kind::Mention => "mention",
            Kind::Chatter => "chatter",
            Kind::BotEcho => "bot_echo",
            Kind::Edit => "edit",
            Kind::Deletion => "deletion",
        }
    }

    /// Whether this kind wakes the round workflow (DESIGN invariant 6).
    pub fn wakes(self) -> bool {
        matches!(self, Kind::Alert | Kind::Mention)
    }
}

/// One Slack thread: the unit of an incident conversation and of Kafka ordering.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ThreadKey {
    /// Workspace (`T…`).
    pub team_id: String,
    /// Channel (`C…`).
    pub channel_id: String,
    /// ts of the thread's parent message.
    pub thread_ts: String,
}

impl ThreadKey {
    /// The Kafka message key: `<team>/<channel>/<thread_ts>`.
    pub fn kafka_key(&self) -> String {
        format!("{}/{}/{}", self.team_id, self.channel_id, self.thread_ts)
    }

    /// The round workflow's id: `incident-<team>-<channel>-<thread_ts>` (DESIGN invariant 4).
    pub fn workflow_id(&self) -> String {
        format!(
            "incident-{}-{}-{}",
            self.team_id, self.channel_id, self.thread_ts
        )
    }
}

/// A classified Slack message, ready to be recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    /// Slack's `event_id` (dedupe key), when delivered as an event.
    pub event_id: Option<String>,
    /// The thread it belongs to.
    pub thread: ThreadKey,
    /// The message's own ts (for edits and deletions: the event's ts).
    pub ts: String,
    /// Its `thread_ts`, when it is a reply.
    pub thread_ts: Option<String>,
    /// What it is.
    pub kind: Kind,
    /// Author, when a person.
    pub user_id: Option<String>,
    /// Author, when a bot.
    pub bot_id: Option<String>,
    /// The app behind a bot.
    pub app_id: Option<String>,
    /// Display name a bot posted under.
    pub username: Option<String>,
    /// Message text (for edits: the new text).
    pub text: String,
    /// The whole event payload as received.
    pub raw: serde_json::Value,
}
