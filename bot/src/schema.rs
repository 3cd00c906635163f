//! The versioned messages the relays send: the Kafka record every recorded Slack message becomes
//! (documented in `docs/kafka-message-schema.md`) and the Temporal wake-up.
//!
//! Both are built at ingest time and stored in the outbox row's `payload`, so a relay only ships
//! bytes it already committed, and what it ships never depends on when it runs.

use crate::model::{Incoming, ThreadKey};
use serde::{Deserialize, Serialize};

/// `schema` of every Kafka record this version writes.
pub const MESSAGE_SCHEMA: &str = "firstline.message.v1";

/// The Kafka record value (JSON), one per recorded message. Key: [`ThreadKey::kafka_key`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageRecord {
    /// Always [`MESSAGE_SCHEMA`]; consumers reject versions they do not know.
    pub schema: String,
    /// `messages.id`: stable across redeliveries, the consumer's dedupe key.
    pub message_id: i64,
    /// Slack's event id, when the message arrived as an event.
    pub event_id: Option<String>,
    /// The thread.
    pub thread: ThreadKey,
    /// The message's ts.
    pub ts: String,
    /// `alert`, `mention`, `chatter`, `bot_echo`, `edit` or `deletion`.
    pub kind: String,
    /// Author (person).
    pub user_id: Option<String>,
    /// Author (bot).
    pub bot_id: Option<String>,
    /// App behind the bot.
    pub app_id: Option<String>,
    /// Bot display name.
    pub username: Option<String>,
    /// Text as received (not redacted: the topic is as sensitive as the channel).
    pub text: String,
    /// When the bot recorded it (RFC 3339).
    pub received_at: String,
}

/// What a `wake` outbox row carries: enough to signal-with-start the thread's round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WakeRecord {
    /// The thread whose round to wake.
    pub thread: ThreadKey,
    /// The signal.
    pub mention: MentionSignal,
}

/// The `incident_round` workflow's input (DESIGN §4: `incident_round(Trigger { thread })`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trigger {
    /// The thread the round is about.
    pub thread: ThreadKey,
}

/// The `mention` signal (DESIGN §4: `mention { user, text, ts }`). Alerts send it too, with the
/// integration as the user, so a round always learns what woke it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MentionSignal {
    /// Who: a user id, or for an alert the bot id / username.
    pub user: String,
    /// The message text.
    pub text: String,
    /// The message ts.
    pub ts: String,
}

impl MessageRecord {
    /// The record for a message stored as `message_id`.
    pub fn new(message_id: i64, m: &Incoming, received_at: chrono::DateTime<chrono::Utc>) -> Self {
        Self {
            schema: MESSAGE_SCHEMA.into(),
            message_id,
            event_id: m.event_id.clone(),
            thread: m.thread.clone(),
            ts: m.ts.clone(),
            kind: m.kind.as_str().into(),
            user_id: m.user_id.clone(),
            bot_id: m.bot_id.clone(),
            app_id: m.app_id.clone(),
            username: m.username.clone(),
            text: m.text.clone(),
            received_at: received_at.to_rfc3339(),
        }
    }
}

impl WakeRecord {
    /// The wake-up for an alert or mention.
    pub fn new(m: &Incoming) -> Self {
        let user = m
            .user_id
            .clone()
            .or_else(|| m.bot_id.clone())
            .or_else(|| m.username.clone())
            .unwrap_or_default();
        Self {
            thread: m.thread.clone(),
            mention: MentionSignal {
                user,
                text: m.text.clone(),
                ts: m.ts.clone(),
            },
        }
    }
}
