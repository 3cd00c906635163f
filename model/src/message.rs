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
    /// Text as received, with an integration's attachments appended, secrets redacted (the
    /// same redaction as `messages.text`).
    pub text: String,
    /// When the bot recorded it (RFC 3339).
    pub received_at: String,
}

/// `schema` of the Kafka record a resolved thread's incident becomes.
pub const INCIDENT_SCHEMA: &str = "firstline.incident.v1";

/// The Kafka record value (JSON) of a new incident, on the same topic as the messages (key: its
/// thread's [`ThreadKey::kafka_key`]), so the embedder learns of incidents the way it learns of
/// messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncidentRecord {
    /// Always [`INCIDENT_SCHEMA`].
    pub schema: String,
    /// `incidents.id`: the consumer's dedupe key.
    pub incident_id: i64,
    /// The resolved thread.
    pub thread: ThreadKey,
    /// What recall compares by meaning: [`incident_text`] of the incident.
    pub text: String,
    /// When the thread was resolved (RFC 3339).
    pub resolved_at: String,
}

/// The text an incident is embedded from: the most telling parts first (a model reads a bounded
/// prefix), each on its own line.
pub fn incident_text(
    title: &str,
    root_cause: &str,
    resolution: &str,
    summary: &str,
    alertname: Option<&str>,
    service: Option<&str>,
) -> String {
    [
        alertname.unwrap_or_default(),
        service.unwrap_or_default(),
        title,
        root_cause,
        resolution,
        summary,
    ]
    .into_iter()
    .map(str::trim)
    .filter(|part| !part.is_empty())
    .collect::<Vec<_>>()
    .join("\n")
}

/// What a topic record is, read from its `schema` field first so that a record of a version we
/// do not know is told apart from a malformed one.
#[derive(Debug, Clone, PartialEq)]
pub enum TopicRecord {
    /// A recorded Slack message.
    Message(MessageRecord),
    /// A new incident.
    Incident(IncidentRecord),
    /// An action's audit, at its last state.
    Action(Box<crate::action::ActionRecord>),
}

impl TopicRecord {
    /// Decodes a record's value; the error says why in words (for the poison-record log).
    pub fn decode(value: &[u8]) -> Result<Self, String> {
        #[derive(Deserialize)]
        struct Schema {
            schema: String,
        }
        let schema: Schema = serde_json::from_slice(value)
            .map_err(|e| format!("not a JSON object with a `schema` string: {e}"))?;
        match schema.schema.as_str() {
            MESSAGE_SCHEMA => serde_json::from_slice(value)
                .map(TopicRecord::Message)
                .map_err(|e| format!("not a valid {MESSAGE_SCHEMA} record: {e}")),
            INCIDENT_SCHEMA => serde_json::from_slice(value)
                .map(TopicRecord::Incident)
                .map_err(|e| format!("not a valid {INCIDENT_SCHEMA} record: {e}")),
            crate::action::ACTION_SCHEMA => serde_json::from_slice(value)
                .map(|record| TopicRecord::Action(Box::new(record)))
                .map_err(|e| format!("not a valid {} record: {e}", crate::action::ACTION_SCHEMA)),
            other => Err(format!("unknown schema `{other}`")),
        }
    }
}

/// What a `wake` outbox row carries: enough to signal-with-start the thread's round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WakeRecord {
    /// The thread whose round to wake.
    pub thread: ThreadKey,
    /// The signal.
    pub mention: MentionSignal,
    /// W3C `traceparent` of the request that recorded the message, when a trace was recorded:
    /// the signal continues that trace (absent in rows written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::{INCIDENT_SCHEMA, TopicRecord, incident_text};

    #[test]
    fn records_are_told_apart_by_schema_and_garbage_says_why() {
        let incident = format!(
            r#"{{"schema":"{INCIDENT_SCHEMA}","incident_id":7,
                "thread":{{"team_id":"T","channel_id":"C","thread_ts":"1.2"}},
                "text":"payments crash loop","resolved_at":"2026-12-03T10:00:00Z"}}"#
        );
        match TopicRecord::decode(incident.as_bytes()) {
            Ok(TopicRecord::Incident(record)) => assert_eq!(record.incident_id, 7),
            other => panic!("expected an incident, got {other:?}"),
        }
        let unknown = TopicRecord::decode(br#"{"schema":"firstline.message.v9"}"#);
        assert!(unknown.unwrap_err().contains("unknown schema"));
        assert!(
            TopicRecord::decode(b"\xff\xfe")
                .unwrap_err()
                .contains("not a JSON")
        );
        let truncated = TopicRecord::decode(br#"{"schema":"firstline.message.v2","message_id":1}"#);
        assert!(
            truncated
                .unwrap_err()
                .contains("not a valid firstline.message.v2")
        );
    }

    #[test]
    fn incident_text_puts_the_telling_parts_first_and_skips_blanks() {
        assert_eq!(
            incident_text(
                "title",
                "cause",
                "",
                "summary",
                Some("KubePodCrashLooping"),
                None
            ),
            "KubePodCrashLooping\ntitle\ncause\nsummary"
        );
    }
}
