//! Socket Mode: the bot opens a websocket (`apps.connections.open` with the app-level token,
//! through slack-morphism's listener) instead of receiving HTTP requests.
//!
//! After the envelope, events take the same [`Pipeline`] as the Events API, and dedupe on
//! `event_id` covers redelivered envelopes; `interactive` envelopes (clicks on a question's
//! choices, Approve / Reject) take the pipeline's interaction path, deduped on the action's ts
//! (a decision: on the action's state), and
//! `slash_commands` envelopes the command path, answered in the ack. The ack goes out when the callback returns, so the
//! callback does only the bounded recording transaction (`bot.ingest_timeout_ms`); reactions and
//! relays happen elsewhere. If recording fails, no ack is sent and Slack redelivers
//! (ARCHITECTURE.md, invariant 2: ack after commit, never after anything else).

use crate::pipeline::Pipeline;
use firstline_config::SecretString;
use firstline_slack::connector;
use slack_morphism::prelude::*;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A Socket Mode connection feeding the pipeline.
pub struct SocketModeListener {
    pipeline: Pipeline,
    api_url: String,
    app_token: SecretString,
}

impl SocketModeListener {
    /// A listener using `app_token` against the Web API at `api_url`.
    pub fn new(pipeline: Pipeline, api_url: &str, app_token: &SecretString) -> Self {
        Self {
            pipeline,
            api_url: api_url.trim_end_matches('/').to_string(),
            app_token: app_token.clone(),
        }
    }

    /// Connects and serves until `cancel` fires.
    pub async fn run(self, cancel: CancellationToken) {
        let connector = SlackClientHyperConnector::with_connector(connector())
            .with_slack_api_url(&self.api_url);
        let client = Arc::new(SlackClient::new(connector));
        let environment = Arc::new(
            SlackClientEventsListenerEnvironment::new(client)
                .with_error_handler(not_recorded)
                .with_user_state(self.pipeline.clone()),
        );
        let callbacks = SlackSocketModeListenerCallbacks::new()
            .with_push_events(on_push_event)
            .with_interaction_events(on_interaction)
            .with_command_events(on_command);
        let config = SlackClientSocketModeConfig::new().with_max_connections_count(1);
        let listener = SlackClientSocketModeListener::new(&config, environment, callbacks);
        let token =
            SlackApiToken::new(SlackApiTokenValue::new(self.app_token.expose().to_string()));
        if let Err(e) = listener.listen_for(&token).await {
            tracing::error!(error = %e, check = %firstline_config::env_var("slack.app_token"), "Socket Mode: could not open a connection");
            return;
        }
        listener.start().await;
        tracing::info!("Socket Mode connected");
        cancel.cancelled().await;
        listener.shutdown().await;
        tracing::info!("Socket Mode stopped");
    }
}

/// The pipeline the listener was started with.
async fn pipeline_of(state: &SlackClientEventsUserState) -> Result<Pipeline, &'static str> {
    let guard = state.read().await;
    guard
        .get_user_state::<Pipeline>()
        .cloned()
        .ok_or("Socket Mode: pipeline missing from listener state")
}

async fn on_push_event(
    event: SlackPushEventCallback,
    _client: Arc<SlackHyperClient>,
    state: SlackClientEventsUserState,
) -> UserCallbackResult<()> {
    let pipeline = pipeline_of(&state).await?;
    let payload = serde_json::to_value(SlackPushEvent::EventCallback(event))?;
    pipeline.handle(&payload).await?;
    Ok(())
}

async fn on_interaction(
    event: SlackInteractionEvent,
    _client: Arc<SlackHyperClient>,
    state: SlackClientEventsUserState,
) -> UserCallbackResult<()> {
    let pipeline = pipeline_of(&state).await?;
    let payload = serde_json::to_value(event)?;
    pipeline.handle_interaction(&payload).await?;
    Ok(())
}

async fn on_command(
    event: SlackCommandEvent,
    _client: Arc<SlackHyperClient>,
    state: SlackClientEventsUserState,
) -> UserCallbackResult<SlackCommandEventResponse> {
    let pipeline = pipeline_of(&state).await?;
    let thread = firstline_model::ThreadKey {
        team_id: event.team_id.to_string(),
        channel_id: event.channel_id.to_string(),
        thread_ts: String::new(),
    };
    let text = event.text.unwrap_or_default();
    let reply = pipeline
        .handle_command(thread, event.user_id.as_ref(), &text)
        .await?;
    Ok(
        SlackCommandEventResponse::new(SlackMessageContent::new().with_text(reply))
            .with_response_type(SlackMessageResponseType::Ephemeral),
    )
}

/// A failed callback: no ack, so Slack redelivers the envelope.
fn not_recorded(
    error: Box<dyn std::error::Error + Send + Sync>,
    _client: Arc<SlackHyperClient>,
    _state: SlackClientEventsUserState,
) -> axum::http::StatusCode {
    tracing::error!(error = %error, "Socket Mode event not recorded; not acking so Slack redelivers");
    axum::http::StatusCode::SERVICE_UNAVAILABLE
}
