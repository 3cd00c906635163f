//! The bot's vocabulary: what kind a message is, and the message as the rest of the pipeline sees
//! it (after classification, before storage), with the records it becomes on Kafka and in the
//! wake-up.

use firstline_model::{MESSAGE_SCHEMA, MentionSignal, MessageRecord, ThreadKey, WakeRecord};
use serde::{Deserialize, Serialize};

/// What a recorded message is. [`Kind::Alert`] and [`Kind::Mention`] wake a round; a person's
/// reply or [`Kind::Answer`] wakes it while its thread awaits an answer.
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
    /// A click on a question's choice, or text typed into its box (`interaction.rs`).
    Answer,
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
            Kind::Answer => "answer",
        }
    }

    /// Whether this kind always wakes the round workflow: only alerts and mentions do; a reply
    /// wakes it only while its thread awaits an answer (`ingest.rs`; ARCHITECTURE.md, invariant
    /// 6).
    pub fn wakes(self) -> bool {
        matches!(self, Kind::Alert | Kind::Mention)
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
    /// W3C `traceparent` of the request that brought it, when a trace is recorded (set by the
    /// pipeline, never read from the payload): its wake-up continues that trace.
    pub traceparent: Option<String>,
}

impl Incoming {
    /// This message with the secrets people paste (tokens, keys, passwords, connection strings,
    /// JWTs, private keys) removed from its text and from every string of its payload, so they
    /// are never stored, published or signalled. Returns how many were removed.
    pub fn redacted(mut self) -> (Self, usize) {
        let text = firstline_redact::redact(&self.text);
        let (raw, in_raw) = firstline_redact::redact_json(&self.raw);
        self.text = text.text;
        self.raw = raw;
        (self, text.redactions + in_raw)
    }

    /// The Kafka record of this message, stored as `message_id` at `received_at`.
    pub fn record(
        &self,
        message_id: i64,
        received_at: chrono::DateTime<chrono::Utc>,
    ) -> MessageRecord {
        MessageRecord {
            schema: MESSAGE_SCHEMA.into(),
            message_id,
            event_id: self.event_id.clone(),
            thread: self.thread.clone(),
            ts: self.ts.clone(),
            kind: self.kind.as_str().into(),
            user_id: self.user_id.clone(),
            bot_id: self.bot_id.clone(),
            app_id: self.app_id.clone(),
            username: self.username.clone(),
            text: self.text.clone(),
            received_at: received_at.to_rfc3339(),
        }
    }

    /// The wake-up of this alert or mention: its thread and the `mention` signal.
    pub fn wake(&self) -> WakeRecord {
        let user = self
            .user_id
            .clone()
            .or_else(|| self.bot_id.clone())
            .or_else(|| self.username.clone())
            .unwrap_or_default();
        WakeRecord {
            thread: self.thread.clone(),
            mention: MentionSignal {
                user,
                text: self.text.clone(),
                ts: self.ts.clone(),
                clicked: self.kind == Kind::Answer,
            },
            traceparent: self.traceparent.clone(),
        }
    }
}
