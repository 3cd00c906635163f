//! The Web API methods Firstline calls, answered the way Slack answers them (`ok`/`error`
//! envelopes, 429 + `Retry-After` when a test asks for it), each call recorded.

use super::StandInState;
use super::state::{
    ALERTMANAGER_APP_ID, ALERTMANAGER_BOT_ID, APP_ID, Author, BOT_ID, BOT_USER_ID, Call, Failure,
    Message, TEAM_ID,
};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// `GET|POST /api/{method}`.
pub async fn method(
    State(state): State<StandInState>,
    Path(method): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let params = params(&query, &headers, &body);
    let (status, answer, retry_after) = match state.workspace.take_failure(&method) {
        Some(Failure::Error(code)) => (StatusCode::OK, json!({"ok": false, "error": code}), None),
        Some(Failure::RateLimited { retry_after_secs }) => (
            StatusCode::TOO_MANY_REQUESTS,
            json!({"ok": false, "error": "ratelimited"}),
            Some(retry_after_secs),
        ),
        None if !authorized(&headers, &params) => (
            StatusCode::OK,
            json!({"ok": false, "error": "not_authed"}),
            None,
        ),
        None => (StatusCode::OK, answer(&state, &method, &params), None),
    };
    state.workspace.record(Call {
        method: method.clone(),
        params: Value::Object(params),
        status: status.as_u16(),
    });
    let mut response = (status, axum::Json(answer)).into_response();
    if let Some(secs) = retry_after
        && let Ok(value) = secs.to_string().parse()
    {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

fn authorized(headers: &HeaderMap, params: &Map<String, Value>) -> bool {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.len() > "Bearer ".len() && v.starts_with("Bearer "));
    bearer
        || params
            .get("token")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty())
}

/// Query, form and JSON parameters, merged.
fn params(query: &HashMap<String, String>, headers: &HeaderMap, body: &[u8]) -> Map<String, Value> {
    let mut params: Map<String, Value> = query
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json {
        if let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) {
            params.extend(fields);
        }
    } else {
        for (k, v) in form_urlencoded::parse(body) {
            params.insert(k.into_owned(), Value::String(v.into_owned()));
        }
    }
    params
}

fn text_of(params: &Map<String, Value>) -> String {
    let text = params
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !text.is_empty() {
        return text.to_string();
    }
    // Blocks only: join their section texts, as Slack's fallback would show them.
    let blocks = match params.get("blocks") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    blocks
        .as_array()
        .map(|bs| {
            bs.iter()
                .filter_map(|b| b.pointer("/text/text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn str_param<'a>(params: &'a Map<String, Value>, key: &str) -> &'a str {
    params.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn answer(state: &StandInState, method: &str, params: &Map<String, Value>) -> Value {
    let ws = &state.workspace;
    match method {
        "auth.test" => json!({
            "ok": true, "url": "https://firstline-dev.slack.com/", "team": "Firstline Dev",
            "user": "firstline", "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID,
        }),
        "apps.connections.open" => json!({"ok": true, "url": state.socket_url()}),
        "chat.postMessage" => {
            let channel = str_param(params, "channel");
            if !ws.has_channel(channel) {
                return json!({"ok": false, "error": "channel_not_found"});
            }
            let thread_ts = Some(str_param(params, "thread_ts"))
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            let message = Message {
                ts: ws.next_ts(),
                thread_ts,
                author: Author::Bot {
                    bot_id: BOT_ID.into(),
                    app_id: APP_ID.into(),
                    user: Some(BOT_USER_ID.into()),
                    username: "firstline".into(),
                },
                text: text_of(params),
                reactions: Vec::new(),
                edited: false,
            };
            state.publish(channel, message.clone());
            json!({"ok": true, "channel": channel, "ts": message.ts,
                   "message": {"type": "message", "text": message.text, "ts": message.ts,
                               "user": BOT_USER_ID, "bot_id": BOT_ID}})
        }
        "chat.update" => {
            let channel = str_param(params, "channel");
            if !ws.has_channel(channel) {
                return json!({"ok": false, "error": "channel_not_found"});
            }
            match ws.update(channel, str_param(params, "ts"), &text_of(params)) {
                Some(m) => json!({"ok": true, "channel": channel, "ts": m.ts, "text": m.text,
                    "message": {"text": m.text, "user": BOT_USER_ID, "bot_id": BOT_ID}}),
                None => json!({"ok": false, "error": "message_not_found"}),
            }
        }
        "reactions.add" => {
            match ws.react(
                str_param(params, "channel"),
                str_param(params, "timestamp"),
                str_param(params, "name"),
            ) {
                Ok(()) => json!({"ok": true}),
                Err(code) => json!({"ok": false, "error": code}),
            }
        }
        "conversations.replies" => {
            match ws.thread(str_param(params, "channel"), str_param(params, "ts")) {
                Some(messages) if !messages.is_empty() => json!({
                    "ok": true, "has_more": false,
                    "messages": messages.iter().map(message_json).collect::<Vec<_>>(),
                }),
                Some(_) => json!({"ok": false, "error": "thread_not_found"}),
                None => json!({"ok": false, "error": "channel_not_found"}),
            }
        }
        _ => json!({"ok": false, "error": "unknown_method"}),
    }
}

fn message_json(m: &Message) -> Value {
    let mut v = json!({"type": "message", "ts": m.ts, "text": m.text});
    if let Some(t) = &m.thread_ts {
        v["thread_ts"] = json!(t);
    }
    match &m.author {
        Author::User { user } => v["user"] = json!(user),
        Author::Bot {
            bot_id,
            user,
            username,
            ..
        } => {
            v["bot_id"] = json!(bot_id);
            v["username"] = json!(username);
            if let Some(u) = user {
                v["user"] = json!(u);
            }
        }
    }
    v
}

/// `POST /webhook/{channel}`: an incoming webhook, as Alertmanager's Slack receiver posts it
/// (`text`, `username`, `attachments[].{title,text,fallback}`), posted as the Alertmanager bot.
pub async fn webhook(
    State(state): State<StandInState>,
    Path(channel): Path<String>,
    body: Bytes,
) -> Response {
    let payload: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => return (StatusCode::BAD_REQUEST, "invalid_payload").into_response(),
    };
    let channel = payload
        .get("channel")
        .and_then(Value::as_str)
        .filter(|c| c.starts_with('C'))
        .map_or(channel, str::to_string);
    state
        .workspace
        .ensure_channel(&channel, &channel.to_lowercase());
    let mut text = payload
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    for attachment in payload
        .get("attachments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for key in ["title", "text"] {
            if let Some(part) = attachment.get(key).and_then(Value::as_str)
                && !part.is_empty()
            {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(part);
            }
        }
    }
    if text.is_empty() {
        return (StatusCode::BAD_REQUEST, "no_text").into_response();
    }
    let username = payload
        .get("username")
        .and_then(Value::as_str)
        .unwrap_or("Alertmanager")
        .to_string();
    let message = Message {
        ts: state.workspace.next_ts(),
        thread_ts: None,
        author: Author::Bot {
            bot_id: ALERTMANAGER_BOT_ID.into(),
            app_id: ALERTMANAGER_APP_ID.into(),
            user: None,
            username,
        },
        text,
        reactions: Vec::new(),
        edited: false,
    };
    state.workspace.record(Call {
        method: "webhook".into(),
        params: payload,
        status: 200,
    });
    state.publish(&channel, message);
    (StatusCode::OK, "ok").into_response()
}
