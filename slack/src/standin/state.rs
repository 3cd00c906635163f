//! The stand-in's workspace: channels, messages (with threads and reactions), the ephemeral
//! messages shown to one person, user groups and their members, every Web API call received, and
//! the failures a test asked for. Ids have Slack's shapes (`T…`, `C…`, `U…`, `B…`,
//! ts `1733140000.000100`, event ids `Ev…`).

use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Workspace id.
pub const TEAM_ID: &str = "T07F1RSTDEV";
/// The bot's user id.
pub const BOT_USER_ID: &str = "U07F1RSTBOT";
/// The bot's bot id.
pub const BOT_ID: &str = "B07F1RSTBOT";
/// The Firstline app's id.
pub const APP_ID: &str = "A07F1RSTAPP";
/// The default incident channel.
pub const INCIDENTS: &str = "C07INCIDENT";
/// The Alertmanager integration's bot id (incoming webhook posts).
pub const ALERTMANAGER_BOT_ID: &str = "B07ALERTMGR";
/// The Alertmanager integration's app id.
pub const ALERTMANAGER_APP_ID: &str = "A07ALERTMGR";
/// A person on call.
pub const ONCALL_USER: &str = "U07ONCALL01";

/// Who posted a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Author {
    /// A person.
    User {
        /// `U…`.
        user: String,
    },
    /// A bot or integration.
    Bot {
        /// `B…`.
        bot_id: String,
        /// `A…`.
        app_id: String,
        /// The bot's user (bots that have one, like Firstline).
        user: Option<String>,
        /// Display name.
        username: String,
    },
}

/// One message in a channel.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    /// Its ts.
    pub ts: String,
    /// Parent's ts, for replies.
    pub thread_ts: Option<String>,
    /// Author.
    pub author: Author,
    /// Text, as posted (the fallback when the message has blocks; often empty when it has
    /// attachments).
    pub text: String,
    /// Block Kit blocks, as posted.
    pub blocks: Option<serde_json::Value>,
    /// Legacy attachments (`pretext`, `title`, `text`, `fields`, `fallback`, `color`), as posted:
    /// Slack keeps them beside the text rather than folding them into it.
    pub attachments: Option<serde_json::Value>,
    /// Message metadata (`{"event_type", "event_payload"}`), as posted.
    pub metadata: Option<serde_json::Value>,
    /// Reactions, in the order they were added.
    pub reactions: Vec<Reaction>,
    /// Edited by `chat.update`.
    pub edited: bool,
}

impl Message {
    /// A plain-text message by `author` (no blocks, attachments, metadata or reactions).
    pub fn text(ts: String, thread_ts: Option<String>, author: Author, text: String) -> Self {
        Self {
            ts,
            thread_ts,
            author,
            text,
            blocks: None,
            attachments: None,
            metadata: None,
            reactions: Vec::new(),
            edited: false,
        }
    }

    /// Whether anyone reacted with `name`.
    pub fn has_reaction(&self, name: &str) -> bool {
        self.reactions.iter().any(|r| r.name == name)
    }
}

/// One person's (or bot's) reaction on a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reaction {
    /// Emoji name, e.g. `white_check_mark`.
    pub name: String,
    /// Who reacted (`U…`).
    pub user: String,
}

/// One Web API call as received.
#[derive(Debug, Clone, Serialize)]
pub struct Call {
    /// Method, e.g. `chat.postMessage`.
    pub method: String,
    /// Merged query, form and JSON parameters.
    pub params: serde_json::Value,
    /// The HTTP status answered.
    pub status: u16,
}

/// A message shown to one person only (`chat.postEphemeral`): not stored in the channel, not
/// delivered to the bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ephemeral {
    /// Channel id.
    pub channel: String,
    /// The one person who sees it.
    pub user: String,
    /// The thread it shows in, when given.
    pub thread_ts: Option<String>,
    /// Text.
    pub text: String,
    /// Its ts.
    pub ts: String,
}

/// A failure a test wants the next call of a method to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// `{"ok": false, "error": code}` with HTTP 200, as Slack does (e.g. `channel_not_found`).
    Error(String),
    /// HTTP 429 with `Retry-After: secs` and `{"ok": false, "error": "ratelimited"}`.
    RateLimited {
        /// Seconds.
        retry_after_secs: u64,
    },
}

/// The whole workspace.
#[derive(Debug, Default)]
pub struct Workspace {
    channels: Mutex<BTreeMap<String, (String, Vec<Message>)>>,
    calls: Mutex<Vec<Call>>,
    failures: Mutex<HashMap<String, VecDeque<Failure>>>,
    clock: AtomicU64,
    event_seq: AtomicU64,
    /// Dialogs the bot opened (`views.open`): id, the trigger it answered, the view.
    views: Mutex<Vec<(String, String, serde_json::Value)>>,
    /// Ephemeral messages shown, in order.
    ephemerals: Mutex<Vec<Ephemeral>>,
    /// User groups (`S…`) and their members' user ids.
    user_groups: Mutex<BTreeMap<String, Vec<String>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Workspace {
    /// A workspace with `#incidents`.
    pub fn new() -> Self {
        let ws = Self::default();
        ws.ensure_channel(INCIDENTS, "incidents");
        ws
    }

    /// Creates channel `id` named `name` unless it exists.
    pub fn ensure_channel(&self, id: &str, name: &str) {
        lock(&self.channels)
            .entry(id.to_string())
            .or_insert_with(|| (name.to_string(), Vec::new()));
    }

    /// Whether channel `id` exists.
    pub fn has_channel(&self, id: &str) -> bool {
        lock(&self.channels).contains_key(id)
    }

    /// A fresh ts, strictly increasing: wall-clock microseconds.
    pub fn next_ts(&self) -> String {
        let now = chrono::Utc::now().timestamp_micros().max(0) as u64;
        let mut previous = self.clock.load(Ordering::Relaxed);
        loop {
            let next = now.max(previous + 1);
            match self
                .clock
                .compare_exchange(previous, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return format!("{}.{:06}", next / 1_000_000, next % 1_000_000),
                Err(actual) => previous = actual,
            }
        }
    }

    /// A fresh event id (`Ev` + 10 characters of Slack's alphabet).
    pub fn next_event_id(&self) -> String {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        let mut n = self.event_seq.fetch_add(1, Ordering::Relaxed)
            + (chrono::Utc::now().timestamp_millis().max(0) as u64) * 1000;
        let mut id = [b'0'; 10];
        for slot in id.iter_mut().rev() {
            *slot = ALPHABET[(n % 36) as usize];
            n /= 36;
        }
        format!("Ev{}", String::from_utf8_lossy(&id))
    }

    /// Appends a message; `None` if the channel does not exist.
    pub fn post(&self, channel: &str, message: Message) -> Option<Message> {
        let mut channels = lock(&self.channels);
        let (_, messages) = channels.get_mut(channel)?;
        messages.push(message.clone());
        Some(message)
    }

    /// Replaces a message's text, and its blocks when `blocks` is given (Slack keeps them
    /// otherwise); `None` if not found.
    pub fn update(
        &self,
        channel: &str,
        ts: &str,
        text: &str,
        blocks: Option<serde_json::Value>,
    ) -> Option<Message> {
        self.with_message(channel, ts, |message| {
            message.text = text.to_string();
            if let Some(blocks) = blocks {
                message.blocks = blocks
                    .as_array()
                    .is_some_and(|b| !b.is_empty())
                    .then_some(blocks);
            }
            message.edited = true;
            Ok(message.clone())
        })
        .ok()
    }

    /// Runs `change` on message `ts` of `channel` under the lock; Slack's error codes when
    /// either is missing.
    fn with_message<R>(
        &self,
        channel: &str,
        ts: &str,
        change: impl FnOnce(&mut Message) -> Result<R, &'static str>,
    ) -> Result<R, &'static str> {
        let mut channels = lock(&self.channels);
        let (_, messages) = channels.get_mut(channel).ok_or("channel_not_found")?;
        let message = messages
            .iter_mut()
            .find(|m| m.ts == ts)
            .ok_or("message_not_found")?;
        change(message)
    }

    /// `user` adds reaction `name` to message `ts`: `Err(code)` as Slack would answer. `Ok`
    /// carries the message's author, for the `reaction_added` event's `item_user`.
    pub fn react(
        &self,
        channel: &str,
        ts: &str,
        name: &str,
        user: &str,
    ) -> Result<Option<String>, &'static str> {
        self.with_message(channel, ts, |message| {
            if message
                .reactions
                .iter()
                .any(|r| r.name == name && r.user == user)
            {
                return Err("already_reacted");
            }
            message.reactions.push(Reaction {
                name: name.to_string(),
                user: user.to_string(),
            });
            Ok(author_user(&message.author))
        })
    }

    /// `user` removes their reaction `name` from message `ts`: `Err("no_reaction")` when they
    /// had none, as Slack answers.
    pub fn unreact(
        &self,
        channel: &str,
        ts: &str,
        name: &str,
        user: &str,
    ) -> Result<Option<String>, &'static str> {
        self.with_message(channel, ts, |message| {
            let before = message.reactions.len();
            message
                .reactions
                .retain(|r| !(r.name == name && r.user == user));
            if message.reactions.len() == before {
                return Err("no_reaction");
            }
            Ok(author_user(&message.author))
        })
    }

    /// Records a dialog the bot opened for `trigger`; returns its id.
    pub fn open_view(&self, trigger: &str, view: serde_json::Value) -> String {
        let mut views = lock(&self.views);
        let id = format!("V{:08}", views.len() + 1);
        views.push((id.clone(), trigger.to_string(), view));
        id
    }

    /// The dialog opened for `trigger`: its id and view.
    pub fn view_for(&self, trigger: &str) -> Option<(String, serde_json::Value)> {
        lock(&self.views)
            .iter()
            .find(|(_, t, _)| t == trigger)
            .map(|(id, _, view)| (id.clone(), view.clone()))
    }

    /// Records an ephemeral message shown to one person.
    pub fn post_ephemeral(&self, ephemeral: Ephemeral) {
        lock(&self.ephemerals).push(ephemeral);
    }

    /// The ephemeral messages shown to `user`, oldest first.
    pub fn ephemerals(&self, user: &str) -> Vec<Ephemeral> {
        lock(&self.ephemerals)
            .iter()
            .filter(|e| e.user == user)
            .cloned()
            .collect()
    }

    /// Defines user group `id` (`S…`) with `members` (user ids), replacing any earlier members.
    pub fn set_user_group(&self, id: &str, members: &[&str]) {
        lock(&self.user_groups).insert(
            id.to_string(),
            members.iter().map(|m| m.to_string()).collect(),
        );
    }

    /// User group `id`'s members; `None` when no such group exists.
    pub fn user_group(&self, id: &str) -> Option<Vec<String>> {
        lock(&self.user_groups).get(id).cloned()
    }

    /// Message `ts` of `channel`, as it is now.
    pub fn message(&self, channel: &str, ts: &str) -> Option<Message> {
        let channels = lock(&self.channels);
        let (_, messages) = channels.get(channel)?;
        messages.iter().find(|m| m.ts == ts).cloned()
    }

    /// A thread: the parent, then its replies in order.
    pub fn thread(&self, channel: &str, thread_ts: &str) -> Option<Vec<Message>> {
        let channels = lock(&self.channels);
        let (_, messages) = channels.get(channel)?;
        Some(
            messages
                .iter()
                .filter(|m| m.ts == thread_ts || m.thread_ts.as_deref() == Some(thread_ts))
                .cloned()
                .collect(),
        )
    }

    /// Every channel: `(id, name, messages)`.
    pub fn channels(&self) -> Vec<(String, String, Vec<Message>)> {
        lock(&self.channels)
            .iter()
            .map(|(id, (name, messages))| (id.clone(), name.clone(), messages.clone()))
            .collect()
    }

    /// Records a call.
    pub fn record(&self, call: Call) {
        lock(&self.calls).push(call);
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.calls).clone()
    }

    /// Queues a failure for the next call of `method`.
    pub fn fail_next(&self, method: &str, failure: Failure) {
        lock(&self.failures)
            .entry(method.to_string())
            .or_default()
            .push_back(failure);
    }

    /// The queued failure for this call of `method`, if any.
    pub fn take_failure(&self, method: &str) -> Option<Failure> {
        lock(&self.failures).get_mut(method)?.pop_front()
    }
}

/// The user id behind a message's author, if it has one.
fn author_user(author: &Author) -> Option<String> {
    match author {
        Author::User { user } => Some(user.clone()),
        Author::Bot { user, .. } => user.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_slacks_shapes_and_ts_increase() {
        let ws = Workspace::new();
        let a = ws.next_ts();
        let b = ws.next_ts();
        assert!(b > a, "{a} {b}");
        let (secs, micros) = a.split_once('.').unwrap();
        assert_eq!(secs.len(), 10);
        assert_eq!(micros.len(), 6);
        let id = ws.next_event_id();
        assert!(id.starts_with("Ev") && id.len() == 12, "{id}");
        assert_ne!(id, ws.next_event_id());
        for id in [TEAM_ID, BOT_USER_ID, BOT_ID, INCIDENTS, ONCALL_USER] {
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            );
            assert_eq!(id.len(), 11);
        }
    }
}
