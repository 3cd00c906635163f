//! The `[bot]` section: the process that takes Slack events in, decides which messages are
//! alerts, and relays the outbox to Kafka and Temporal.

use super::check;
use crate::ConfigError;
use serde::{Deserialize, Serialize};

/// Longest `bot.outbox_retention_hours` accepted.
const MAX_OUTBOX_RETENTION_HOURS: u64 = 24 * 365 * 10;

/// Which messages in which channels are alerts. A rule matches when the channel matches, the
/// sender matches one of the sender lists (when any is given), and the text matches one of the
/// patterns (when any is given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AlertRule {
    /// Channel ids the rule applies to; empty or `*` means every channel.
    pub channels: Vec<String>,
    /// Integration bot ids (`B…`) that post alerts.
    pub bot_ids: Vec<String>,
    /// Integration app ids (`A…`) that post alerts.
    pub app_ids: Vec<String>,
    /// Bot usernames that post alerts (case-insensitive), e.g. `Alertmanager`.
    pub usernames: Vec<String>,
    /// Regular expressions over the message text.
    pub text_patterns: Vec<String>,
}

/// The bot process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BotSettings {
    /// Address the Events API endpoint (`/slack/events`), `/healthz` and `/metrics` listen on.
    pub listen: String,
    /// Largest request body accepted, in bytes.
    pub body_limit_bytes: usize,
    /// Milliseconds the ingest transaction may take before Slack gets a 503 (Slack waits 3 s).
    pub ingest_timeout_ms: u64,
    /// Most messages committed in one ingest transaction (group commit under load).
    pub ingest_batch_max: u64,
    /// Most ingest transactions in flight at once (each holds a database connection).
    pub ingest_transactions: u64,
    /// Which messages are alerts, per channel.
    pub alert_rules: Vec<AlertRule>,
    /// React with 👀 to a mention or a firing alert as soon as it is recorded (✅ to a mention
    /// that resolved its thread).
    pub ack_reaction: bool,
    /// Outbox rows one relay claims at a time.
    pub relay_batch: u32,
    /// Milliseconds a relay sleeps when the outbox is empty.
    pub relay_poll_ms: u64,
    /// First retry delay of a failed outbox row, in milliseconds (doubles per attempt).
    pub relay_backoff_initial_ms: u64,
    /// Cap on the retry delay of a failed outbox row, in seconds.
    pub relay_backoff_max_secs: u64,
    /// Seconds a Kafka publish or Temporal call may take before it counts as failed.
    pub relay_call_timeout_secs: u64,
    /// Hours a delivered outbox row is kept before it is deleted (undelivered rows never are).
    pub outbox_retention_hours: u64,
}

impl Default for BotSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:3000".into(),
            body_limit_bytes: 1024 * 1024,
            ingest_timeout_ms: 2500,
            ingest_batch_max: 64,
            ingest_transactions: 2,
            alert_rules: vec![AlertRule {
                channels: Vec::new(),
                bot_ids: Vec::new(),
                app_ids: Vec::new(),
                usernames: ["Alertmanager", "Grafana", "PagerDuty", "Datadog"]
                    .map(String::from)
                    .to_vec(),
                text_patterns: Vec::new(),
            }],
            ack_reaction: true,
            relay_batch: 100,
            relay_poll_ms: 200,
            relay_backoff_initial_ms: 500,
            relay_backoff_max_secs: 60,
            relay_call_timeout_secs: 10,
            outbox_retention_hours: 168,
        }
    }
}

impl BotSettings {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        check::socket_addr("bot.listen", &self.listen)?;
        check::at_least_one(&[
            ("bot.body_limit_bytes", self.body_limit_bytes as u64),
            ("bot.ingest_timeout_ms", self.ingest_timeout_ms),
            ("bot.ingest_batch_max", self.ingest_batch_max),
            ("bot.ingest_transactions", self.ingest_transactions),
            ("bot.relay_batch", u64::from(self.relay_batch)),
            ("bot.relay_poll_ms", self.relay_poll_ms),
            (
                "bot.relay_backoff_initial_ms",
                self.relay_backoff_initial_ms,
            ),
            ("bot.relay_backoff_max_secs", self.relay_backoff_max_secs),
            ("bot.relay_call_timeout_secs", self.relay_call_timeout_secs),
            ("bot.outbox_retention_hours", self.outbox_retention_hours),
        ])?;
        // Past this the cutoff leaves PostgreSQL's timestamp range and retention would fail
        // every pass; ten years is "keep them".
        if self.outbox_retention_hours > MAX_OUTBOX_RETENTION_HOURS {
            return Err(ConfigError::rejected(
                "bot.outbox_retention_hours",
                format!("must be at most {MAX_OUTBOX_RETENTION_HOURS} (ten years)"),
            ));
        }
        for pattern in self.alert_rules.iter().flat_map(|rule| &rule.text_patterns) {
            if let Err(e) = regex::Regex::new(pattern) {
                return Err(ConfigError::rejected(
                    "bot.alert_rules",
                    format!("text pattern `{pattern}` is not a regular expression: {e}"),
                ));
            }
        }
        Ok(())
    }
}
