//! How the stand-in tells the bot about a message, exactly as Slack does: an `event_callback`
//! carrying the message as posted (text, blocks, attachments, metadata), plus `app_mention` when
//! the bot is mentioned (its own event id, the same ts), either POSTed to the Events API URL with
//! a valid `v0` signature — retried up to 3 times with `X-Slack-Retry-Num` when the bot does not
//! answer 2xx within 3 s — or pushed over a connected Socket Mode websocket.
//!
//! Interactions (a click on a block's button or select, text typed into an input) go the same two
//! ways: a signed form POST (`payload=<json>`) to the app's interactivity URL — the events URL's
//! `/slack/interactivity` sibling, as the app manifest configures — which Slack does not retry,
//! or an `interactive` envelope over the websocket.

use super::state::{APP_ID, Author, BOT_USER_ID, Message, TEAM_ID, Workspace};
use crate::signing;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc;

/// Slack's delivery deadline.
const ACK_DEADLINE: Duration = Duration::from_secs(3);
/// Slack retries a failed delivery this many times.
const RETRIES: u32 = 3;

/// What goes over a Socket Mode connection, by envelope type.
#[derive(Debug, Clone)]
pub enum Envelope {
    /// `events_api`.
    Events(Value),
    /// `interactive`: a click on a block.
    Interactive(Value),
    /// `slash_commands`.
    Command(Value),
}

impl Envelope {
    /// Its `type`, and whether the app may answer in the ack.
    pub fn kind(&self) -> (&'static str, bool) {
        match self {
            Envelope::Events(_) => ("events_api", false),
            Envelope::Interactive(_) => ("interactive", true),
            Envelope::Command(_) => ("slash_commands", true),
        }
    }

    pub fn payload(&self) -> &Value {
        match self {
            Envelope::Events(p) | Envelope::Interactive(p) | Envelope::Command(p) => p,
        }
    }
}

/// Where events go.
#[derive(Debug)]
pub struct Deliverer {
    secret: String,
    events_url: Mutex<Option<String>>,
    sockets: Mutex<Vec<mpsc::UnboundedSender<Envelope>>>,
    client: Client<HttpConnector, Full<Bytes>>,
    retry_delay: Duration,
}

impl Deliverer {
    /// Delivers events signed with `secret` to `events_url` (if any). `retry_delay` spaces
    /// retries (Slack: ~1 min; the stand-in: short, so tests and dev stay quick).
    pub fn new(secret: &str, events_url: Option<String>, retry_delay: Duration) -> Self {
        Self {
            secret: secret.to_string(),
            events_url: Mutex::new(events_url),
            sockets: Mutex::new(Vec::new()),
            client: Client::builder(TokioExecutor::new()).build(HttpConnector::new()),
            retry_delay,
        }
    }

    /// Points HTTP delivery at `url`.
    pub fn set_events_url(&self, url: Option<String>) {
        *self.events_url.lock().unwrap_or_else(|p| p.into_inner()) = url;
    }

    /// Registers a Socket Mode connection; events go to sockets while any is connected.
    pub fn add_socket(&self, socket: mpsc::UnboundedSender<Envelope>) {
        self.sockets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(socket);
    }

    /// How many Socket Mode connections are open now.
    pub fn sockets_connected(&self) -> usize {
        self.open_sockets().len()
    }

    /// The Socket Mode connections still open; closed ones are forgotten.
    fn open_sockets(&self) -> Vec<mpsc::UnboundedSender<Envelope>> {
        let mut sockets = self.sockets.lock().unwrap_or_else(|p| p.into_inner());
        sockets.retain(|s| !s.is_closed());
        sockets.clone()
    }

    /// The event payloads Slack sends for `message` in `channel`.
    pub fn payloads(workspace: &Workspace, channel: &str, message: &Message) -> Vec<Value> {
        let mut event = json!({
            "type": "message",
            "channel": channel,
            "text": message.text,
            "ts": message.ts,
            "event_ts": message.ts,
            "channel_type": "channel",
            "team": TEAM_ID,
        });
        if let Some(thread_ts) = &message.thread_ts {
            event["thread_ts"] = json!(thread_ts);
        }
        // Like Slack: message events carry the blocks and attachments as posted, and the metadata
        // when there is some.
        if let Some(blocks) = &message.blocks {
            event["blocks"] = blocks.clone();
        }
        if let Some(attachments) = &message.attachments {
            event["attachments"] = attachments.clone();
        }
        if let Some(metadata) = &message.metadata {
            event["metadata"] = metadata.clone();
        }
        let mut mentions_bot = false;
        match &message.author {
            Author::User { user } => {
                event["user"] = json!(user);
                event["client_msg_id"] = json!(uuid::Uuid::new_v4().to_string());
                mentions_bot = message.text.contains(&format!("<@{BOT_USER_ID}"));
            }
            Author::Bot {
                bot_id,
                app_id,
                user,
                username,
            } => {
                event["subtype"] = json!("bot_message");
                event["bot_id"] = json!(bot_id);
                event["app_id"] = json!(app_id);
                event["username"] = json!(username);
                if let Some(user) = user {
                    event["user"] = json!(user);
                }
            }
        }
        let mut payloads = vec![wrap(workspace, event.clone())];
        if mentions_bot {
            let mut mention = json!({
                "type": "app_mention",
                "user": event["user"],
                "text": message.text,
                "ts": message.ts,
                "event_ts": message.ts,
                "channel": channel,
                "team": TEAM_ID,
            });
            if let Some(thread_ts) = &message.thread_ts {
                mention["thread_ts"] = json!(thread_ts);
            }
            payloads.push(wrap(workspace, mention));
        }
        payloads
    }

    /// The `reaction_added` (or `reaction_removed`) payload for `user`'s reaction `name` on
    /// message `ts` in `channel`, written by `item_user`.
    pub fn reaction_payload(
        workspace: &Workspace,
        added: bool,
        channel: &str,
        ts: &str,
        name: &str,
        user: &str,
        item_user: Option<&str>,
    ) -> Value {
        let mut event = json!({
            "type": if added { "reaction_added" } else { "reaction_removed" },
            "user": user,
            "reaction": name,
            "item": {"type": "message", "channel": channel, "ts": ts},
            "event_ts": workspace.next_ts(),
        });
        if let Some(item_user) = item_user {
            event["item_user"] = json!(item_user);
        }
        wrap(workspace, event)
    }

    /// The `block_actions` payload of `user` acting on `message` in `channel`: `action` is the
    /// action as Slack describes it (`action_id`, `value` or `selected_option`), its `action_ts`
    /// filled in and, when it has none, the `block_id` of the block holding an element with its
    /// `action_id`. Returns the payload and the action's ts.
    pub fn block_actions(
        workspace: &Workspace,
        channel: &str,
        message: &Message,
        user: &str,
        mut action: Value,
    ) -> (Value, String) {
        let action_ts = workspace.next_ts();
        action["action_ts"] = json!(action_ts);
        // Slack names the block the element is in: the first whose element has this action id.
        if action.get("block_id").is_none()
            && let Some(block_id) = message
                .blocks
                .as_ref()
                .and_then(Value::as_array)
                .and_then(|blocks| {
                    blocks.iter().find(|b| {
                        let elements = b["elements"].as_array().into_iter().flatten();
                        elements
                            .chain(std::iter::once(&b["element"]))
                            .any(|e| e["action_id"] == action["action_id"])
                    })
                })
                .and_then(|b| b.get("block_id"))
        {
            action["block_id"] = block_id.clone();
        }
        let mut shown = json!({"type": "message", "ts": message.ts, "text": message.text,
            "blocks": message.blocks.clone().unwrap_or_else(|| json!([]))});
        if let Some(thread_ts) = &message.thread_ts {
            shown["thread_ts"] = json!(thread_ts);
        }
        let payload = json!({
            "type": "block_actions",
            "team": {"id": TEAM_ID, "domain": "standin"},
            "user": {"id": user, "username": user, "team_id": TEAM_ID},
            "api_app_id": APP_ID,
            "token": "standin-verification-token",
            "container": {"type": "message", "message_ts": message.ts, "channel_id": channel,
                          "is_ephemeral": false},
            "trigger_id": format!("{action_ts}.standin"),
            "channel": {"id": channel, "name": channel.to_lowercase()},
            "message": shown,
            "response_url": "https://hooks.slack.invalid/actions/standin",
            "actions": [action],
        });
        (payload, action_ts)
    }

    /// Sends interaction `payload` to the bot: over a websocket when one is connected (queued;
    /// the envelope is re-sent until acked, as events are), else as a signed form POST to the
    /// interactivity URL, waiting for the answer (Slack gives the app 3 s and does not retry).
    /// `Err` says why it could not be delivered or was not acknowledged.
    pub async fn interact(&self, payload: Value) -> Result<(), String> {
        if let Some(socket) = self.open_sockets().first() {
            return socket
                .send(Envelope::Interactive(payload))
                .map_err(|e| e.to_string());
        }
        let url = self.sibling_url("/slack/interactivity")?;
        let body: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("payload", &payload.to_string())
            .finish();
        self.post_as(&url, &body, 0, "application/x-www-form-urlencoded")
            .await
    }

    /// Sends slash command `fields` (`command`, `text`, `user_id`, `channel_id`, …) to the bot:
    /// over a websocket when one is connected (`Ok(None)`: Socket Mode answers in the ack), else
    /// as a signed form POST to the commands URL (the events URL's `/slack/commands` sibling),
    /// returning the bot's JSON answer.
    pub async fn command(&self, fields: &[(&str, &str)]) -> Result<Option<Value>, String> {
        if let Some(socket) = self.open_sockets().first() {
            let payload: serde_json::Map<String, Value> = fields
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            return socket
                .send(Envelope::Command(Value::Object(payload)))
                .map(|()| None)
                .map_err(|e| e.to_string());
        }
        let url = self.sibling_url("/slack/commands")?;
        let mut form = form_urlencoded::Serializer::new(String::new());
        for (k, v) in fields {
            form.append_pair(k, v);
        }
        let body = form.finish();
        let mut request =
            hyper::Request::post(&url).header("content-type", "application/x-www-form-urlencoded");
        for (name, value) in signing::headers(&self.secret, signing::now(), body.as_bytes()) {
            request = request.header(name, value);
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(ACK_DEADLINE, self.client.request(request))
            .await
            .map_err(|_| "no answer within 3 s".to_string())?
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        serde_json::from_slice(&body)
            .map(Some)
            .map_err(|e| format!("the answer is not JSON: {e}"))
    }

    /// The bot's endpoint `path` beside its events URL.
    fn sibling_url(&self, path: &str) -> Result<String, String> {
        let url = self
            .events_url
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or("no events URL or websocket to deliver to")?;
        match url.strip_suffix("/slack/events") {
            Some(base) => Ok(format!("{base}{path}")),
            None => Err(format!("cannot derive {path} from {url}")),
        }
    }

    /// Sends `payload` to the bot in the background.
    pub fn send(self: &std::sync::Arc<Self>, payload: Value) {
        if let Some(socket) = self.open_sockets().first() {
            let _ = socket.send(Envelope::Events(payload));
            return;
        }
        let url = self
            .events_url
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(url) = url {
            let this = self.clone();
            tokio::spawn(async move { this.post_with_retries(&url, payload).await });
        }
    }

    async fn post_with_retries(&self, url: &str, payload: Value) {
        let body = payload.to_string();
        for attempt in 0..=RETRIES {
            if attempt > 0 {
                tokio::time::sleep(self.retry_delay).await;
            }
            match self.post(url, &body, attempt).await {
                Ok(()) => return,
                Err(e) => tracing::debug!(attempt, error = %e, "stand-in: event delivery failed"),
            }
        }
        tracing::warn!(
            url,
            "stand-in: event not delivered after retries (Slack would give up too)"
        );
    }

    /// One signed POST, like Slack's (retry headers from the second attempt on).
    pub async fn post(&self, url: &str, body: &str, attempt: u32) -> Result<(), String> {
        self.post_as(url, body, attempt, "application/json").await
    }

    /// One signed POST of `body` as `content_type`.
    async fn post_as(
        &self,
        url: &str,
        body: &str,
        attempt: u32,
        content_type: &str,
    ) -> Result<(), String> {
        let mut request = hyper::Request::post(url).header("content-type", content_type);
        for (name, value) in signing::headers(&self.secret, signing::now(), body.as_bytes()) {
            request = request.header(name, value);
        }
        if attempt > 0 {
            request = request
                .header("x-slack-retry-num", attempt.to_string())
                .header("x-slack-retry-reason", "http_timeout");
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| e.to_string())?;
        match tokio::time::timeout(ACK_DEADLINE, self.client.request(request)).await {
            Ok(Ok(response)) if response.status().is_success() => Ok(()),
            Ok(Ok(response)) => Err(format!("HTTP {}", response.status())),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("no answer within 3 s".into()),
        }
    }
}

fn wrap(workspace: &Workspace, event: Value) -> Value {
    json!({
        "token": "standin-verification-token",
        "team_id": TEAM_ID,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": workspace.next_event_id(),
        "event_time": chrono::Utc::now().timestamp(),
        "authorizations": [{
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "is_bot": true,
            "is_enterprise_install": false
        }],
        "is_ext_shared_channel": false,
    })
}
