//! The versioned records the bot's relays ship: the Kafka record every recorded Slack message
//! becomes (documented in `docs/kafka-message-schema.md`) and the Temporal wake-up.
//!
//! Both are built at ingest time and stored in the outbox row's `payload`, so a relay only ships
//! bytes it already committed, and what it ships never depends on when it runs. Consumers of the
//! topic read [`MessageRecord`] from here.

use serde::{Deserialize, Serialize};

use crate::{MentionSignal, ThreadKey};

/// `schema` of every Kafka record this version writes.
pub const MESSAGE_SCHEMA: &str = "firstline.message.v2";

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
    /// Text as received, with an integration's attachments appended (not redacted: the topic is
    /// as sensitive as the channel).
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
