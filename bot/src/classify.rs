//! Classification: every Slack event payload becomes either a message to record (with its
//! [`Kind`]) or a reason it is not one.
//!
//! Works on the raw JSON payload (the same for the Events API and Socket Mode), so an event shape
//! slack-morphism does not model is still classified. The rules, in order:
//!
//! 1. `message_changed` / `message_replied` → edit; `message_deleted` → deletion.
//! 2. From a bot (`bot_id`, subtype `bot_message`) or from our own user: alert if an alert rule
//!    matches, otherwise bot echo (never answer bots, invariant 6, ARCHITECTURE.md).
//! 3. From a person: alert if a rule matches (text-pattern rules), mention if it is an
//!    `app_mention` or contains `<@BOT_USER_ID>`, otherwise chatter.
//! 4. System subtypes (joins, topic changes, …) are chatter: recorded, never answered.
//!
//! A bot's message whose content is in legacy `attachments` (Alertmanager's and Grafana's Slack
//! formats) is read as its text followed by the attachments' text, so rules, storage and the
//! round all see the alert.

use crate::message::{Incoming, Kind};
use firstline_alert::attachments::message_text;
use firstline_config::AlertRule;
use firstline_model::ThreadKey;
use regex::Regex;
use serde_json::Value;
use std::borrow::Cow;

/// Message subtypes that are edits of an earlier message.
const EDIT_SUBTYPES: &[&str] = &["message_changed", "message_replied"];
/// Message subtypes that remove a message.
const DELETION_SUBTYPES: &[&str] = &["message_deleted"];

/// Why an event is not recorded as a message (it is acknowledged all the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// Not an `event_callback` (e.g. `app_rate_limited`).
    NotACallback(String),
    /// An event type that is not a message (reactions, joins, channel renames, unknown types).
    NotAMessage(String),
    /// A message event without the fields a message needs (channel, ts).
    Incomplete(&'static str),
}

/// A compiled alert rule.
#[derive(Debug, Clone)]
struct Rule {
    channels: Vec<String>,
    bot_ids: Vec<String>,
    app_ids: Vec<String>,
    usernames: Vec<String>,
    patterns: Vec<Regex>,
}

impl Rule {
    fn matches(&self, m: &Sender<'_>, channel: &str, text: &str) -> bool {
        let channel_ok =
            self.channels.is_empty() || self.channels.iter().any(|c| c == "*" || c == channel);
        let any_sender =
            !(self.bot_ids.is_empty() && self.app_ids.is_empty() && self.usernames.is_empty());
        let sender_ok = !any_sender
            || m.bot_id
                .is_some_and(|b| self.bot_ids.iter().any(|x| x == b))
            || m.app_id
                .is_some_and(|a| self.app_ids.iter().any(|x| x == a))
            || m.username
                .is_some_and(|u| self.usernames.iter().any(|x| x.eq_ignore_ascii_case(u)));
        let text_ok = self.patterns.is_empty() || self.patterns.iter().any(|p| p.is_match(text));
        // A rule with no sender list and no pattern would make everything an alert: never match.
        let constrained = any_sender || !self.patterns.is_empty();
        constrained && channel_ok && sender_ok && text_ok
    }
}

struct Sender<'a> {
    bot_id: Option<&'a str>,
    app_id: Option<&'a str>,
    username: Option<&'a str>,
}

/// Turns event payloads into classified messages.
#[derive(Debug, Clone)]
pub struct Classifier {
    bot_user_id: String,
    mention_token: String,
    rules: Vec<Rule>,
}

impl Classifier {
    /// A classifier for the bot whose user id is `bot_user_id`. Patterns were validated with the
    /// settings; one that still fails to compile is dropped with a warning.
    pub fn new(bot_user_id: &str, rules: &[AlertRule]) -> Self {
        let rules = rules
            .iter()
            .map(|r| Rule {
                channels: r.channels.clone(),
                bot_ids: r.bot_ids.clone(),
                app_ids: r.app_ids.clone(),
                usernames: r.usernames.clone(),
                patterns: r
                    .text_patterns
                    .iter()
                    .filter_map(|p| match Regex::new(p) {
                        Ok(re) => Some(re),
                        Err(e) => {
                            tracing::warn!(pattern = %p, error = %e, "alert pattern ignored");
                            None
                        }
                    })
                    .collect(),
            })
            .collect();
        Self {
            bot_user_id: bot_user_id.to_string(),
            mention_token: format!("<@{bot_user_id}"),
            rules,
        }
    }

    /// The bot's user id (empty when unknown).
    pub fn bot_user_id(&self) -> &str {
        &self.bot_user_id
    }

    /// Classifies one push payload (`{"type": "event_callback", "event": {…}, …}`).
    ///
    /// NUL characters become U+FFFD first: Postgres stores neither a NUL in `text` nor `\u0000`
    /// in `jsonb`, and a message it refuses would be refused on every retry and lost.
    pub fn classify(&self, payload: &Value) -> Result<Incoming, Skip> {
        if has_nul(payload) {
            let mut clean = payload.clone();
            replace_nul(&mut clean);
            return self.classify_clean(&clean);
        }
        self.classify_clean(payload)
    }

    fn classify_clean(&self, payload: &Value) -> Result<Incoming, Skip> {
        let kind = str_at(payload, "type").unwrap_or_default();
        if kind != "event_callback" {
            return Err(Skip::NotACallback(kind.to_string()));
        }
        let event = payload.get("event").unwrap_or(&Value::Null);
        let fields = Fields::of(event).map_err(Skip::NotAMessage)?;
        let channel = fields.channel.ok_or(Skip::Incomplete("event.channel"))?;
        let event_ts = fields.event_ts.ok_or(Skip::Incomplete("event.ts"))?;
        let kind = self.kind(&fields, channel);
        let team_id = str_at(payload, "team_id")
            .or_else(|| str_at(event, "team"))
            .unwrap_or_default()
            .to_string();
        // An edit's own ts is unique per event; the edited message's thread keys the thread.
        let thread_parent = match kind {
            Kind::Edit | Kind::Deletion => fields.thread_ts.or(fields.inner_ts).unwrap_or(event_ts),
            _ => fields.thread_ts.unwrap_or(event_ts),
        };
        Ok(Incoming {
            event_id: str_at(payload, "event_id").map(str::to_string),
            thread: ThreadKey {
                team_id,
                channel_id: channel.to_string(),
                thread_ts: thread_parent.to_string(),
            },
            ts: event_ts.to_string(),
            thread_ts: fields.thread_ts.map(str::to_string),
            kind,
            user_id: fields.user.map(str::to_string),
            bot_id: fields.sender.bot_id.map(str::to_string),
            app_id: fields.sender.app_id.map(str::to_string),
            username: fields.sender.username.map(str::to_string),
            text: fields.text.into_owned(),
            raw: payload.clone(),
            traceparent: None,
        })
    }

    /// The kind of one message event (`payload.event`), exactly as received: every message
    /// subtype has one. `Err` names the event type when it is not a message.
    pub fn kind_of(&self, event: &Value) -> Result<Kind, String> {
        let fields = Fields::of(event)?;
        Ok(self.kind(&fields, fields.channel.unwrap_or_default()))
    }

    fn kind(&self, f: &Fields<'_>, channel: &str) -> Kind {
        match f.subtype {
            Some(s) if EDIT_SUBTYPES.contains(&s) => return Kind::Edit,
            Some(s) if DELETION_SUBTYPES.contains(&s) => return Kind::Deletion,
            _ => {}
        }
        let alert = self
            .rules
            .iter()
            .any(|r| r.matches(&f.sender, channel, &f.text));
        let from_bot = f.sender.bot_id.is_some() || f.subtype == Some("bot_message");
        let from_us = !self.bot_user_id.is_empty() && f.user == Some(self.bot_user_id.as_str());
        if from_us {
            return Kind::BotEcho;
        }
        if alert {
            return Kind::Alert;
        }
        if from_bot {
            return Kind::BotEcho;
        }
        let ordinary = matches!(
            f.subtype,
            None | Some("thread_broadcast") | Some("file_share") | Some("me_message")
        );
        let mentions_us = f.event_type == "app_mention"
            || (!self.bot_user_id.is_empty() && f.text.contains(&self.mention_token));
        if ordinary && mentions_us {
            Kind::Mention
        } else {
            Kind::Chatter
        }
    }
}

/// The parts of a message event classification reads. For edits and deletions the author and
/// text are the nested message's.
struct Fields<'a> {
    event_type: &'a str,
    subtype: Option<&'a str>,
    channel: Option<&'a str>,
    event_ts: Option<&'a str>,
    inner_ts: Option<&'a str>,
    thread_ts: Option<&'a str>,
    text: Cow<'a, str>,
    user: Option<&'a str>,
    sender: Sender<'a>,
}

impl<'a> Fields<'a> {
    fn of(event: &'a Value) -> Result<Self, String> {
        let event_type = str_at(event, "type").unwrap_or_default();
        if event_type != "message" && event_type != "app_mention" {
            return Err(event_type.to_string());
        }
        let subtype = str_at(event, "subtype");
        let inner = match subtype {
            Some(s) if EDIT_SUBTYPES.contains(&s) => event.get("message").unwrap_or(event),
            Some(s) if DELETION_SUBTYPES.contains(&s) => {
                event.get("previous_message").unwrap_or(event)
            }
            _ => event,
        };
        let text = str_at(inner, "text").unwrap_or_default();
        // Integrations (Alertmanager's and Grafana's legacy formats) may post the whole alert in
        // `attachments` with an empty `text`: what is stored, matched and investigated is both.
        let from_integration = str_at(inner, "bot_id").is_some() || subtype == Some("bot_message");
        let has_attachments = inner
            .get("attachments")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        let text = if from_integration && has_attachments {
            Cow::Owned(message_text(text, inner))
        } else {
            Cow::Borrowed(text)
        };
        Ok(Self {
            event_type,
            subtype,
            channel: str_at(event, "channel"),
            event_ts: str_at(event, "ts").or_else(|| str_at(event, "event_ts")),
            inner_ts: str_at(inner, "ts").or_else(|| str_at(event, "deleted_ts")),
            thread_ts: str_at(inner, "thread_ts"),
            text,
            user: str_at(inner, "user"),
            sender: Sender {
                bot_id: str_at(inner, "bot_id"),
                app_id: str_at(inner, "app_id")
                    .or_else(|| inner.get("bot_profile").and_then(|p| str_at(p, "app_id"))),
                username: str_at(inner, "username")
                    .or_else(|| inner.get("bot_profile").and_then(|p| str_at(p, "name"))),
            },
        })
    }
}

/// Whether any string or key in `value` holds a NUL.
fn has_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(has_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

fn replace_nul(value: &mut Value) {
    match value {
        Value::String(s) => *s = s.replace('\0', "\u{FFFD}"),
        Value::Array(items) => items.iter_mut().for_each(replace_nul),
        Value::Object(map) => {
            *map = std::mem::take(map)
                .into_iter()
                .map(|(k, mut v)| {
                    replace_nul(&mut v);
                    (k.replace('\0', "\u{FFFD}"), v)
                })
                .collect();
        }
        _ => {}
    }
}

fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests;
