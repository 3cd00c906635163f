//! The Web API methods Firstline calls (`auth.test`, `chat.postMessage` / `chat.update` with blocks
//! and metadata, `chat.postEphemeral`, `reactions.add` / `reactions.remove`,
//! `conversations.replies` with a cursor and `include_all_metadata`, `usergroups.users.list`,
//! `views.open`), answered the way Slack answers them (`ok`/`error`
//! envelopes, 429 + `Retry-After` when a test asks for it), each call recorded; and the incoming
//! webhook alerting tools post to. Messages keep their legacy `attachments` beside their text, as
//! Slack keeps them, so the bot sees the shapes real integrations produce.

use super::StandInState;
use super::state::{
    ALERTMANAGER_APP_ID, ALERTMANAGER_BOT_ID, APP_ID, Author, BOT_ID, BOT_USER_ID, Call, Ephemeral,
    Failure, Message, TEAM_ID,
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
    json_param(params, "blocks")
        .as_ref()
        .and_then(Value::as_array)
        .map(|bs| {
            bs.iter()
                .filter_map(|b| b.pointer("/text/text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// A parameter that is JSON: a value in a JSON body, or a JSON string in a form or query.
fn json_param(params: &Map<String, Value>, key: &str) -> Option<Value> {
    match params.get(key)? {
        Value::String(s) => serde_json::from_str(s).ok(),
        Value::Null => None,
        v => Some(v.clone()),
    }
}

/// Whether a boolean parameter is set (`true`, `1`, or JSON `true`).
fn flag(params: &Map<String, Value>, key: &str) -> bool {
    match params.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true" || s == "1",
        Some(Value::Number(n)) => n.as_u64() == Some(1),
        _ => false,
    }
}

/// An array parameter (`blocks`, `attachments`) as Slack stores it: a non-empty array, else none.
fn array_param(params: &Map<String, Value>, key: &str) -> Option<Value> {
    json_param(params, key).filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
}

/// Message metadata as Slack stores it: an object with an `event_type`.
fn metadata_param(params: &Map<String, Value>) -> Option<Value> {
    json_param(params, "metadata").filter(|m| m.get("event_type").is_some_and(Value::is_string))
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
            let mut message = Message::text(
                ws.next_ts(),
                thread_ts,
                Author::Bot {
                    bot_id: BOT_ID.into(),
                    app_id: APP_ID.into(),
                    user: Some(BOT_USER_ID.into()),
                    username: "firstline".into(),
                },
                text_of(params),
            );
            message.blocks = array_param(params, "blocks");
            message.attachments = array_param(params, "attachments");
            message.metadata = metadata_param(params);
            state.publish(channel, message.clone());
            json!({"ok": true, "channel": channel, "ts": message.ts,
                   "message": message_json(&message, true)})
        }
        "chat.update" => {
            let channel = str_param(params, "channel");
            if !ws.has_channel(channel) {
                return json!({"ok": false, "error": "channel_not_found"});
            }
            // Blocks given (even empty) replace the old ones; absent, they stay.
            let blocks = json_param(params, "blocks").filter(Value::is_array);
            match ws.update(channel, str_param(params, "ts"), &text_of(params), blocks) {
                Some(m) => json!({"ok": true, "channel": channel, "ts": m.ts, "text": m.text,
                    "message": message_json(&m, false)}),
                None => json!({"ok": false, "error": "message_not_found"}),
            }
        }
        "chat.postEphemeral" => {
            let channel = str_param(params, "channel");
            if !ws.has_channel(channel) {
                return json!({"ok": false, "error": "channel_not_found"});
            }
            let user = str_param(params, "user");
            if user.is_empty() {
                return json!({"ok": false, "error": "user_not_in_channel"});
            }
            let text = text_of(params);
            if text.is_empty() {
                return json!({"ok": false, "error": "no_text"});
            }
            let ts = ws.next_ts();
            ws.post_ephemeral(Ephemeral {
                channel: channel.to_string(),
                user: user.to_string(),
                thread_ts: Some(str_param(params, "thread_ts"))
                    .filter(|t| !t.is_empty())
                    .map(str::to_string),
                text,
                ts: ts.clone(),
            });
            json!({"ok": true, "message_ts": ts})
        }
        "chat.getPermalink" => {
            let (channel, ts) = (
                str_param(params, "channel"),
                str_param(params, "message_ts"),
            );
            match ws.thread(channel, ts) {
                None => json!({"ok": false, "error": "channel_not_found"}),
                Some(found) if !found.iter().any(|m| m.ts == ts) => {
                    json!({"ok": false, "error": "message_not_found"})
                }
                Some(_) => json!({"ok": true, "channel": channel, "permalink":
                    format!("https://firstline-dev.slack.com/archives/{channel}/p{}",
                            ts.replace('.', ""))}),
            }
        }
        "usergroups.users.list" => match ws.user_group(str_param(params, "usergroup")) {
            Some(users) => json!({"ok": true, "users": users}),
            None => json!({"ok": false, "error": "no_such_subteam"}),
        },
        "reactions.add" | "reactions.remove" => {
            let (channel, ts, name) = (
                str_param(params, "channel"),
                str_param(params, "timestamp"),
                str_param(params, "name"),
            );
            if name.is_empty() {
                return json!({"ok": false, "error": "invalid_name"});
            }
            let added = method == "reactions.add";
            let outcome = if added {
                ws.react(channel, ts, name, BOT_USER_ID)
            } else {
                ws.unreact(channel, ts, name, BOT_USER_ID)
            };
            match outcome {
                Ok(item_user) => {
                    state.publish_reaction(added, channel, ts, name, BOT_USER_ID, item_user);
                    json!({"ok": true})
                }
                Err(code) => json!({"ok": false, "error": code}),
            }
        }
        "conversations.replies" => {
            match ws.thread(str_param(params, "channel"), str_param(params, "ts")) {
                Some(messages) if !messages.is_empty() => {
                    replies_page(&messages, params, flag(params, "include_all_metadata"))
                }
                Some(_) => json!({"ok": false, "error": "thread_not_found"}),
                None => json!({"ok": false, "error": "channel_not_found"}),
            }
        }
        "views.open" => {
            let trigger = str_param(params, "trigger_id");
            match json_param(params, "view").filter(Value::is_object) {
                _ if trigger.is_empty() => json!({"ok": false, "error": "invalid_trigger_id"}),
                Some(view) => {
                    let id = ws.open_view(trigger, view.clone());
                    let mut shown = view;
                    shown["id"] = json!(id);
                    json!({"ok": true, "view": shown})
                }
                None => json!({"ok": false, "error": "invalid_arguments"}),
            }
        }
        _ => json!({"ok": false, "error": "unknown_method"}),
    }
}

/// One page of a thread: `limit` (default 1000, at most 1000) messages from the `cursor`
/// (an offset, opaque to callers), with `response_metadata.next_cursor` when more remain.
fn replies_page(messages: &[Message], params: &Map<String, Value>, metadata: bool) -> Value {
    let limit = str_param(params, "limit")
        .parse::<usize>()
        .ok()
        .or_else(|| {
            params
                .get("limit")
                .and_then(Value::as_u64)
                .map(|n| n as usize)
        })
        .filter(|n| *n > 0)
        .unwrap_or(1000)
        .min(1000);
    let start = str_param(params, "cursor")
        .strip_prefix("standin:")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0)
        .min(messages.len());
    let end = (start + limit).min(messages.len());
    let mut answer = json!({
        "ok": true,
        "has_more": end < messages.len(),
        "messages": messages[start..end].iter().map(|m| message_json(m, metadata)).collect::<Vec<_>>(),
    });
    if end < messages.len() {
        answer["response_metadata"] = json!({"next_cursor": format!("standin:{end}")});
    }
    answer
}

/// A message as the Web API returns it; `metadata` only when asked for.
fn message_json(m: &Message, metadata: bool) -> Value {
    let mut v = json!({"type": "message", "ts": m.ts, "text": m.text});
    if let Some(t) = &m.thread_ts {
        v["thread_ts"] = json!(t);
    }
    if let Some(blocks) = &m.blocks {
        v["blocks"] = blocks.clone();
    }
    if let Some(attachments) = &m.attachments {
        v["attachments"] = attachments.clone();
    }
    if metadata && let Some(meta) = &m.metadata {
        v["metadata"] = meta.clone();
    }
    if !m.reactions.is_empty() {
        let mut grouped: Vec<(String, Vec<String>)> = Vec::new();
        for r in &m.reactions {
            match grouped.iter_mut().find(|(name, _)| *name == r.name) {
                Some((_, users)) => users.push(r.user.clone()),
                None => grouped.push((r.name.clone(), vec![r.user.clone()])),
            }
        }
        v["reactions"] = grouped
            .into_iter()
            .map(|(name, users)| json!({"name": name, "count": users.len(), "users": users}))
            .collect();
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

/// `POST /webhook/{channel}`: an incoming webhook, as Alertmanager's or Grafana's Slack receiver
/// posts it (`text`, `username`, `attachments[].{pretext,title,text,fields,fallback,color}`),
/// posted as the Alertmanager bot. Like Slack, the text stays as posted (often empty: the alert
/// is all in the attachments) and the attachments stay beside it; only a payload with neither is
/// refused (`no_text`).
pub async fn webhook(
    State(state): State<StandInState>,
    Path(channel): Path<String>,
    body: Bytes,
) -> Response {
    let Ok(payload) = serde_json::from_slice::<Map<String, Value>>(&body) else {
        return (StatusCode::BAD_REQUEST, "invalid_payload").into_response();
    };
    let text = str_param(&payload, "text").to_string();
    let attachments = array_param(&payload, "attachments");
    if text.is_empty() && attachments.is_none() {
        return (StatusCode::BAD_REQUEST, "no_text").into_response();
    }
    let channel = Some(str_param(&payload, "channel"))
        .filter(|c| c.starts_with('C'))
        .map_or(channel, str::to_string);
    state
        .workspace
        .ensure_channel(&channel, &channel.to_lowercase());
    let username = Some(str_param(&payload, "username"))
        .filter(|u| !u.is_empty())
        .unwrap_or("Alertmanager")
        .to_string();
    let mut message = Message::text(
        state.workspace.next_ts(),
        None,
        Author::Bot {
            bot_id: ALERTMANAGER_BOT_ID.into(),
            app_id: ALERTMANAGER_APP_ID.into(),
            user: None,
            username,
        },
        text,
    );
    message.attachments = attachments;
    state.workspace.record(Call {
        method: "webhook".into(),
        params: Value::Object(payload),
        status: 200,
    });
    state.publish(&channel, message);
    (StatusCode::OK, "ok").into_response()
}
