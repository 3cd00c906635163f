//! The Events API endpoint (`POST /slack/events`), the interactivity endpoint (`POST
//! /slack/interactivity`: clicks on a question's choices, a reply's feedback or a proposed
//! action's Approve / Reject, form-encoded `payload=…`, verified the same way), the slash command endpoint (`POST /slack/commands`: `/firstline`, form-encoded,
//! answered with a private message), plus `/healthz` and `/metrics` (which a Socket Mode bot
//! serves alone: [`operations_router`]).
//!
//! Order of checks on an event request: body size (413) → signature and 5-minute timestamp
//! window, verified by slack-morphism's axum layer in constant time (401) → JSON (400) → the
//! envelope's `type`: `url_verification` answered, `app_rate_limited` logged, `event_callback`
//! to the [`Pipeline`] (200 after commit, 503 when the database cannot record it, so Slack
//! retries), another type acknowledged and ignored, no `type` string 400. Nothing is stored
//! before the signature is verified.
//!
//! The body is parsed once, into the JSON value the pipeline classifies and stores as `raw`; the
//! layer only verifies. (Its typed `SlackPushEvent` extractor parsed every event a second time,
//! about 6 % of the bot's CPU in `bench/ingest`, for two fields of the envelope.)

use crate::metrics as names;
use crate::pipeline::{Handled, Pipeline};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use firstline_config::SecretString;
use firstline_slack::connector;
use metrics_exporter_prometheus::PrometheusHandle;
use slack_morphism::prelude::*;
use slack_morphism::signature_verifier::{
    SlackEventAbsentSignatureError, SlackEventSignatureVerifierError,
};
use std::sync::Arc;

/// The bot's HTTP routes. `signing_secret` verifies every event request.
pub fn router(
    pipeline: Pipeline,
    signing_secret: &SecretString,
    body_limit: usize,
    metrics: Option<PrometheusHandle>,
) -> Router {
    let client = Arc::new(SlackClient::new(SlackClientHyperConnector::with_connector(
        connector(),
    )));
    let environment = Arc::new(
        SlackClientEventsListenerEnvironment::new(client).with_error_handler(rejection_status),
    );
    let listener = SlackEventsAxumListener::new(environment);
    let secret = SlackSigningSecret::new(signing_secret.expose().to_string());
    let events = Router::new()
        .route(
            "/slack/events",
            post(events).layer(listener.events_layer(&secret)),
        )
        .route(
            "/slack/interactivity",
            post(interactions).layer(listener.events_layer(&secret)),
        )
        .route(
            "/slack/commands",
            post(commands).layer(listener.events_layer(&secret)),
        );
    events
        .with_state(pipeline)
        .merge(operations_router(metrics))
        .layer(middleware::from_fn(move |request, next| {
            limit_body(request, next, body_limit)
        }))
}

/// `/healthz` and `/metrics` alone: what a Socket Mode bot (no Events API endpoint) serves.
pub fn operations_router(metrics: Option<PrometheusHandle>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(render_metrics))
        .with_state(metrics)
}

/// 413 for a declared length over the limit; a longer chunked body fails the read (400).
async fn limit_body(request: Request, next: Next, limit: usize) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        metrics::counter!(names::EVENTS, "outcome" => "rejected").increment(1);
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    }
    let (parts, body) = request.into_parts();
    let limited = axum::body::Body::new(http_body_util::Limited::new(body, limit));
    next.run(Request::from_parts(parts, limited)).await
}

/// Status for a request slack-morphism rejected: 401 for signature problems, 400 otherwise.
fn rejection_status(
    error: Box<dyn std::error::Error + Send + Sync>,
    _client: Arc<SlackHyperClient>,
    _state: SlackClientEventsUserState,
) -> StatusCode {
    metrics::counter!(names::EVENTS, "outcome" => "rejected").increment(1);
    let signature = error
        .downcast_ref::<SlackEventSignatureVerifierError>()
        .is_some()
        || error
            .downcast_ref::<SlackEventAbsentSignatureError>()
            .is_some();
    if signature {
        tracing::warn!(error = %error, "rejected an event request: bad signature");
        StatusCode::UNAUTHORIZED
    } else {
        tracing::warn!(error = %one_line(&error.to_string()), "rejected an event request");
        StatusCode::BAD_REQUEST
    }
}

fn one_line(s: &str) -> String {
    firstline_model::text::prefix(s, 300).replace('\n', " ")
}

async fn events(State(pipeline): State<Pipeline>, headers: HeaderMap, body: String) -> Response {
    let Ok(payload) = serde_json::from_str::<serde_json::Value>(&body) else {
        return bad_request("the body is not JSON");
    };
    match payload.get("type").and_then(serde_json::Value::as_str) {
        Some("url_verification") => match payload.get("challenge").and_then(|c| c.as_str()) {
            Some(challenge) => Json(serde_json::json!({ "challenge": challenge })).into_response(),
            None => bad_request("url_verification without a challenge"),
        },
        Some("app_rate_limited") => {
            let minute = payload.get("minute_rate_limited");
            tracing::warn!(?minute, "Slack rate-limited our events");
            StatusCode::OK.into_response()
        }
        Some("event_callback") => {
            if let Some(retry) = headers.get("x-slack-retry-num") {
                let reason = headers
                    .get("x-slack-retry-reason")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("unknown")
                    .to_string();
                tracing::debug!(retry = ?retry, %reason, "Slack redelivery");
                metrics::counter!(names::SLACK_RETRIES, "reason" => reason).increment(1);
            }
            match pipeline.handle(&payload).await {
                Ok(
                    Handled::Stored { .. }
                    | Handled::Resolved { .. }
                    | Handled::Duplicate
                    | Handled::Feedback { .. }
                    | Handled::Decided { .. }
                    | Handled::Ignored(_),
                ) => StatusCode::OK.into_response(),
                Err(e) => {
                    tracing::error!(error = %e, "event not recorded; Slack will retry");
                    (StatusCode::SERVICE_UNAVAILABLE, "not recorded, retry").into_response()
                }
            }
        }
        // An envelope type Slack adds later is acknowledged and ignored, as unknown events are:
        // a 400 would only make Slack redeliver it and count our endpoint as failing.
        Some(other) => {
            metrics::counter!(names::EVENTS, "outcome" => "ignored").increment(1);
            tracing::warn!(envelope = %one_line(other), "ignored an envelope of unknown type");
            StatusCode::OK.into_response()
        }
        None => bad_request("the envelope has no `type` string"),
    }
}

/// A verified interaction: `payload=<json>`, form-encoded. 200 once recorded (or refused, which
/// changes nothing), 503 when the database cannot record it.
async fn interactions(State(pipeline): State<Pipeline>, body: String) -> Response {
    let payload = form_urlencoded::parse(body.as_bytes())
        .find(|(key, _)| key == "payload")
        .map(|(_, value)| value.into_owned());
    let Some(payload) = payload else {
        return bad_request("an interaction without a `payload` field");
    };
    let Ok(payload) = serde_json::from_str::<serde_json::Value>(&payload) else {
        return bad_request("the interaction payload is not JSON");
    };
    match pipeline.handle_interaction(&payload).await {
        Ok(_) => StatusCode::OK.into_response(),
        Err(e) => {
            tracing::error!(error = %e, "interaction not recorded");
            (StatusCode::SERVICE_UNAVAILABLE, "not recorded, try again").into_response()
        }
    }
}

/// A verified slash command (form fields `team_id`, `channel_id`, `user_id`, `text`): answered
/// with a private (ephemeral) message; 503 when the request could not be started.
async fn commands(State(pipeline): State<Pipeline>, body: String) -> Response {
    let field = |name: &str| {
        form_urlencoded::parse(body.as_bytes())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    };
    let (Some(team), Some(channel), Some(user)) =
        (field("team_id"), field("channel_id"), field("user_id"))
    else {
        return bad_request("a command without team_id, channel_id or user_id");
    };
    let thread = firstline_model::ThreadKey {
        team_id: team,
        channel_id: channel,
        thread_ts: String::new(),
    };
    let text = field("text").unwrap_or_default();
    match pipeline.handle_command(thread, &user, &text).await {
        Ok(reply) => {
            Json(serde_json::json!({"response_type": "ephemeral", "text": reply})).into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "slash command not started");
            (StatusCode::SERVICE_UNAVAILABLE, "not started, try again").into_response()
        }
    }
}

/// 400 for a verified request whose body is not an envelope we know.
fn bad_request(reason: &'static str) -> Response {
    metrics::counter!(names::EVENTS, "outcome" => "rejected").increment(1);
    tracing::warn!(reason, "rejected an event request");
    StatusCode::BAD_REQUEST.into_response()
}

async fn render_metrics(State(metrics): State<Option<PrometheusHandle>>) -> Response {
    match metrics {
        Some(handle) => (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            handle.render(),
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
