//! The Slack stand-in: a real HTTP server that plays Slack for `firstline dev` (when no bot token
//! is configured) and for every test.
//!
//! - `GET|POST /api/{method}` — the Web API methods Firstline calls ([`web_api`]), recorded;
//!   Slack-shaped errors on request ([`StandIn::fail_next`]); user groups a test defines
//!   ([`StandIn::define_user_group`]) and the ephemeral messages shown
//!   ([`StandIn::ephemerals_for`]).
//! - `GET /socket` — Socket Mode ([`socket`]).
//! - `POST /webhook/{channel}` — an incoming webhook (Alertmanager's and Grafana's Slack receivers
//!   work; legacy `attachments` are kept on the message, as Slack keeps them).
//! - `GET /` — an HTML view of channels and threads ([`html`]), where a person can also click a
//!   message's buttons, pick from its selects, type into its inputs, and reply in a thread
//!   (`POST /ui/act`, `POST /ui/say`).
//!
//! Every message posted (by the bot, a webhook or a simulated person) is delivered to the bot as
//! Slack would deliver it ([`delivery`]), blocks, attachments and metadata included; so is every
//! reaction added or removed (`reaction_added` / `reaction_removed`).

pub mod delivery;
pub mod html;
pub mod socket;
pub mod state;
pub mod web_api;

use axum::Router;
use axum::routing::{any, get, post};
use delivery::Deliverer;
use state::{Author, Call, Ephemeral, Failure, Message, Workspace};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How to run the stand-in.
#[derive(Debug, Clone)]
pub struct StandInConfig {
    /// Address to listen on (port 0: any free port).
    pub listen: SocketAddr,
    /// Secret events are signed with (the bot's `slack.signing_secret`).
    pub signing_secret: String,
    /// The bot's Events API URL (`http://…/slack/events`), if it listens over HTTP.
    pub events_url: Option<String>,
    /// Delay between delivery retries.
    pub retry_delay: Duration,
}

/// Shared state of the running server.
#[derive(Clone)]
pub struct StandInState {
    workspace: Arc<Workspace>,
    deliverer: Arc<Deliverer>,
    addr: SocketAddr,
    cancel: CancellationToken,
}

impl StandInState {
    fn socket_url(&self) -> String {
        format!("ws://{}/socket", self.addr)
    }

    /// A person posts `text` in `channel` (in `thread_ts`'s thread when given); returns the ts.
    fn say(&self, channel: &str, user: &str, text: &str, thread_ts: Option<&str>) -> String {
        self.workspace
            .ensure_channel(channel, &channel.to_lowercase());
        let message = Message::text(
            self.workspace.next_ts(),
            thread_ts.map(str::to_string),
            Author::User {
                user: user.to_string(),
            },
            text.to_string(),
        );
        let ts = message.ts.clone();
        self.publish(channel, message);
        ts
    }

    /// `user` acts on a block of message `ts` in `channel` (see [`StandIn::user_acts`]).
    async fn act(
        &self,
        channel: &str,
        user: &str,
        ts: &str,
        action: serde_json::Value,
    ) -> Result<String, String> {
        let message = self
            .workspace
            .message(channel, ts)
            .ok_or_else(|| format!("no message {ts} in {channel}"))?;
        let (payload, action_ts) =
            Deliverer::block_actions(&self.workspace, channel, &message, user, action);
        self.deliverer.interact(payload).await?;
        Ok(action_ts)
    }

    /// Stores `message` and delivers its events.
    fn publish(&self, channel: &str, message: Message) {
        if let Some(stored) = self.workspace.post(channel, message) {
            for payload in Deliverer::payloads(&self.workspace, channel, &stored) {
                self.deliverer.send(payload);
            }
        }
    }

    /// Delivers `reaction_added` (or `reaction_removed`) for a reaction already applied.
    fn publish_reaction(
        &self,
        added: bool,
        channel: &str,
        ts: &str,
        name: &str,
        user: &str,
        item_user: Option<String>,
    ) {
        let payload = Deliverer::reaction_payload(
            &self.workspace,
            added,
            channel,
            ts,
            name,
            user,
            item_user.as_deref(),
        );
        self.deliverer.send(payload);
    }
}

/// A running stand-in; stops when its cancellation token fires.
pub struct StandIn {
    state: StandInState,
}

impl StandIn {
    /// Binds and serves until `cancel` fires.
    pub async fn start(config: StandInConfig, cancel: CancellationToken) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(config.listen).await?;
        let addr = listener.local_addr()?;
        let state = StandInState {
            workspace: Arc::new(Workspace::new()),
            deliverer: Arc::new(Deliverer::new(
                &config.signing_secret,
                config.events_url,
                config.retry_delay,
            )),
            addr,
            cancel: cancel.clone(),
        };
        let router = Router::new()
            .route("/", get(html::page))
            .route("/api/{method}", any(web_api::method))
            .route("/webhook/{channel}", post(web_api::webhook))
            .route("/socket", get(socket::upgrade))
            .route("/ui/say", post(html::say))
            .route("/ui/act", post(html::act))
            .with_state(state.clone());
        tokio::spawn(async move {
            let served = axum::serve(listener, router)
                .with_graceful_shutdown(async move { cancel.cancelled().await })
                .await;
            if let Err(e) = served {
                tracing::error!(error = %e, "Slack stand-in stopped");
            }
        });
        tracing::info!(%addr, "Slack stand-in listening");
        Ok(Self { state })
    }

    /// `http://127.0.0.1:P`.
    pub fn url(&self) -> String {
        format!("http://{}", self.state.addr)
    }

    /// The Web API base URL to configure as `slack.api_url`.
    pub fn api_url(&self) -> String {
        format!("{}/api", self.url())
    }

    /// Points event delivery at the bot's `/slack/events`.
    pub fn set_events_url(&self, url: Option<String>) {
        self.state.deliverer.set_events_url(url);
    }

    /// How many Socket Mode connections are open now (events go over them rather than HTTP).
    pub fn sockets_connected(&self) -> usize {
        self.state.deliverer.sockets_connected()
    }

    /// A person posts `text` in `channel` (in `thread_ts`'s thread when given); returns the ts.
    pub fn user_says(
        &self,
        channel: &str,
        user: &str,
        text: &str,
        thread_ts: Option<&str>,
    ) -> String {
        self.state.say(channel, user, text, thread_ts)
    }

    /// An integration (Alertmanager's incoming webhook, under `username`) posts `text` at the top
    /// of `channel`, as the `/webhook/{channel}` endpoint does; returns the message's ts.
    pub fn integration_posts(&self, channel: &str, username: &str, text: &str) -> String {
        self.state
            .workspace
            .ensure_channel(channel, &channel.to_lowercase());
        let message = Message::text(
            self.state.workspace.next_ts(),
            None,
            Author::Bot {
                bot_id: state::ALERTMANAGER_BOT_ID.into(),
                app_id: state::ALERTMANAGER_APP_ID.into(),
                user: None,
                username: username.to_string(),
            },
            text.to_string(),
        );
        let ts = message.ts.clone();
        self.state.publish(channel, message);
        ts
    }

    /// `user` (a person, or any user id) reacts with `name` to message `ts` in `channel`, and the
    /// bot gets `reaction_added`, as from Slack. `Err` is Slack's error code.
    pub fn user_reacts(
        &self,
        channel: &str,
        user: &str,
        ts: &str,
        name: &str,
    ) -> Result<(), &'static str> {
        let item_user = self.state.workspace.react(channel, ts, name, user)?;
        self.state
            .publish_reaction(true, channel, ts, name, user, item_user);
        Ok(())
    }

    /// `user` clicks (or types into) a block of message `ts` in `channel`: `action` is the action
    /// as Slack describes it (`{"type": "button", "block_id", "action_id", "value"}`, a
    /// `static_select` with `selected_option`, a `plain_text_input` with `value`). The bot gets a
    /// signed `block_actions` interaction over HTTP or Socket Mode, as from Slack, and the call
    /// returns once it answered: `Ok(action_ts)`, or `Err` saying why it did not acknowledge.
    pub async fn user_acts(
        &self,
        channel: &str,
        user: &str,
        ts: &str,
        action: serde_json::Value,
    ) -> Result<String, String> {
        self.state.act(channel, user, ts, action).await
    }

    /// `user` submits dialog `view_id` (opened by the bot with `views.open`), having typed
    /// `typed` — `(block_id, action_id, value)` — into its inputs: the bot gets a signed
    /// `view_submission` interaction, as from Slack.
    pub async fn user_submits_view(
        &self,
        user: &str,
        view_id: &str,
        view: &serde_json::Value,
        typed: &[(&str, &str, &str)],
    ) -> Result<(), String> {
        let mut values = serde_json::Map::new();
        for (block, action, value) in typed {
            values.insert(
                block.to_string(),
                serde_json::json!({*action: {"type": "plain_text_input", "value": value}}),
            );
        }
        let mut submitted = view.clone();
        submitted["id"] = serde_json::json!(view_id);
        submitted["state"] = serde_json::json!({"values": values});
        let payload = serde_json::json!({
            "type": "view_submission",
            "team": {"id": state::TEAM_ID, "domain": "standin"},
            "user": {"id": user, "username": user, "team_id": state::TEAM_ID},
            "api_app_id": state::APP_ID,
            "token": "standin-verification-token",
            "trigger_id": format!("{}.standin", self.state.workspace.next_ts()),
            "view": submitted,
        });
        self.state.deliverer.interact(payload).await
    }

    /// `user` runs `/firstline text` in `channel`: the bot gets the slash command, signed over
    /// HTTP (the bot's JSON answer is returned) or over Socket Mode (`None`: answered in the ack).
    pub async fn user_runs_command(
        &self,
        channel: &str,
        user: &str,
        text: &str,
    ) -> Result<Option<serde_json::Value>, String> {
        self.state
            .workspace
            .ensure_channel(channel, &channel.to_lowercase());
        let trigger = format!("{}.standin", self.state.workspace.next_ts());
        self.state
            .deliverer
            .command(&[
                ("token", "standin-verification-token"),
                ("team_id", state::TEAM_ID),
                ("team_domain", "standin"),
                ("channel_id", channel),
                ("channel_name", &channel.to_lowercase()),
                ("user_id", user),
                ("user_name", user),
                ("command", "/firstline"),
                ("text", text),
                ("api_app_id", state::APP_ID),
                (
                    "response_url",
                    "https://hooks.slack.invalid/commands/standin",
                ),
                ("trigger_id", &trigger),
            ])
            .await
    }

    /// Defines user group `id` (`S…`) with `members`, as `usergroups.users.list` will answer
    /// (a group never defined is Slack's `no_such_subteam`).
    pub fn define_user_group(&self, id: &str, members: &[&str]) {
        self.state.workspace.set_user_group(id, members);
    }

    /// The ephemeral messages (`chat.postEphemeral`) shown to `user`, oldest first.
    pub fn ephemerals_for(&self, user: &str) -> Vec<Ephemeral> {
        self.state.workspace.ephemerals(user)
    }

    /// Every Web API call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.state.workspace.calls()
    }

    /// Makes the next call of `method` fail with `failure`.
    pub fn fail_next(&self, method: &str, failure: Failure) {
        self.state.workspace.fail_next(method, failure);
    }

    /// The workspace (channels, messages, reactions).
    pub fn workspace(&self) -> &Workspace {
        &self.state.workspace
    }

    /// The deliverer (tests use it to sign and send payloads of their own).
    pub fn deliverer(&self) -> &Deliverer {
        &self.state.deliverer
    }
}
