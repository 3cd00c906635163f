//! A scripted OpenAI-compatible server on a real socket, for tests (feature `scripted`).
//!
//! It binds `127.0.0.1:0`, serves `POST /v1/chat/completions` (streaming off), answers each
//! request with the next [`ScriptedReply`] in its queue, and records every request so a test can
//! assert on the messages, tools and `response_format` it was sent. An empty queue answers
//! HTTP 500 "script exhausted", so a test that asks more than it scripted fails loudly — unless
//! the server was started with a responder ([`ScriptedServer::responding`]), which then answers
//! each request from what it asks (a long run, such as `firstline eval --model` over every case).

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// One scripted answer: a status, a body (a chat completion, an error, or anything), a delay.
#[derive(Debug, Clone)]
pub struct ScriptedReply {
    status: u16,
    body: Body,
    delay: Duration,
    headers: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
enum Body {
    Json(Value),
    Raw(String),
}

impl ScriptedReply {
    /// A 200 chat completion whose only choice is `message` stopped for `finish_reason`, with
    /// usage 10 prompt + 5 completion tokens.
    pub fn completion(message: Value, finish_reason: &str) -> Self {
        let mut message = message;
        if let Value::Object(fields) = &mut message {
            fields
                .entry("role")
                .or_insert_with(|| Value::String("assistant".into()));
        }
        Self {
            status: 200,
            body: Body::Json(json!({
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": 0,
                "model": "scripted",
                "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            })),
            delay: Duration::ZERO,
            headers: Vec::new(),
        }
    }

    /// A plain text answer.
    pub fn text(content: &str) -> Self {
        Self::completion(json!({"content": content}), "stop")
    }

    /// A structured answer: `value` serialised as the content.
    pub fn json(value: &Value) -> Self {
        Self::text(&value.to_string())
    }

    /// One tool call (id `call_1`).
    pub fn tool_call(name: &str, arguments: Value) -> Self {
        Self::tool_calls(&[(name, arguments)])
    }

    /// Several tool calls in one answer (ids `call_1`, `call_2`, …).
    pub fn tool_calls(calls: &[(&str, Value)]) -> Self {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(index, (name, arguments))| {
                json!({
                    "id": format!("call_{}", index + 1),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()},
                })
            })
            .collect();
        Self::completion(json!({"content": null, "tool_calls": calls}), "tool_calls")
    }

    /// An answer cut off at the token limit (`finish_reason = length`).
    pub fn length(partial: &str) -> Self {
        Self::completion(json!({"content": partial}), "length")
    }

    /// A refusal.
    pub fn refusal(text: &str) -> Self {
        Self::completion(json!({"content": null, "refusal": text}), "stop")
    }

    /// An error status with an OpenAI-style error body.
    pub fn status(status: u16, message: &str) -> Self {
        Self::raw_json(
            status,
            json!({"error": {"message": message, "type": "scripted_error", "param": null, "code": null}}),
        )
    }

    /// Any status and body, sent as `application/json` whether or not it is JSON.
    pub fn raw(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            body: Body::Raw(body.into()),
            delay: Duration::ZERO,
            headers: Vec::new(),
        }
    }

    fn raw_json(status: u16, body: Value) -> Self {
        Self {
            status,
            body: Body::Json(body),
            delay: Duration::ZERO,
            headers: Vec::new(),
        }
    }

    /// Reports this usage instead of 10 + 5 tokens (completions only).
    pub fn with_usage(mut self, prompt_tokens: u32, completion_tokens: u32) -> Self {
        if let Body::Json(Value::Object(fields)) = &mut self.body
            && fields.contains_key("usage")
        {
            fields.insert(
                "usage".into(),
                json!({
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                }),
            );
        }
        self
    }

    /// Waits this long before answering.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Adds a response header (e.g. `retry-after`).
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = match self.body {
            Body::Json(value) => value.to_string(),
            Body::Raw(text) => text,
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            axum::http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        for (name, value) in self.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                headers.insert(name, value);
            }
        }
        (status, headers, body).into_response()
    }
}

/// A request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The JSON body (a string holding the raw text if it was not JSON).
    pub body: Value,
    /// The `Authorization` header, if sent.
    pub authorization: Option<String>,
}

impl RecordedRequest {
    /// Names of the tools offered.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The messages sent.
    pub fn messages(&self) -> Vec<Value> {
        self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The `response_format` sent, if any.
    pub fn response_format(&self) -> Option<&Value> {
        self.body.get("response_format")
    }
}

/// Answers a request the queue has no reply for.
pub type Responder = Box<dyn Fn(&RecordedRequest) -> ScriptedReply + Send + Sync>;

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<ScriptedReply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    responder: Option<Responder>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The running server; dropping it stops it.
pub struct ScriptedServer {
    addr: SocketAddr,
    script: Arc<Script>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl ScriptedServer {
    /// Binds `127.0.0.1:0` and serves `replies` in order.
    pub async fn start(replies: impl IntoIterator<Item = ScriptedReply>) -> std::io::Result<Self> {
        let script = Script::default();
        locked(&script.replies).extend(replies);
        Self::serve(script, ("127.0.0.1", 0)).await
    }

    /// Binds `addr` and answers every request with `responder`.
    pub async fn responding(
        addr: impl tokio::net::ToSocketAddrs,
        responder: Responder,
    ) -> std::io::Result<Self> {
        let script = Script {
            responder: Some(responder),
            ..Script::default()
        };
        Self::serve(script, addr).await
    }

    async fn serve(script: Script, addr: impl tokio::net::ToSocketAddrs) -> std::io::Result<Self> {
        let script = Arc::new(script);
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .route("/v1/chat/completions", post(answer))
            // Scripted with `ScriptedReply::raw(200, …)` bodies in the embeddings shape.
            .route("/v1/embeddings", post(answer))
            .fallback(|| async {
                ScriptedReply::status(
                    404,
                    "the scripted server serves /v1/chat/completions and /v1/embeddings only",
                )
                .into_response()
            })
            .with_state(script.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
            if let Err(error) = served {
                tracing::warn!(%error, "scripted model server stopped");
            }
        });
        Ok(Self {
            addr,
            script,
            stop: Some(stop),
        })
    }

    /// The API base to give a client: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: ScriptedReply) {
        locked(&self.script.replies).push_back(reply);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        locked(&self.script.requests).clone()
    }

    /// Requests received so far.
    pub fn request_count(&self) -> usize {
        locked(&self.script.requests).len()
    }

    /// Replies not yet served.
    pub fn remaining(&self) -> usize {
        locked(&self.script.replies).len()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn answer(State(script): State<Arc<Script>>, headers: HeaderMap, body: String) -> Response {
    let body = serde_json::from_str(&body).unwrap_or(Value::String(body));
    let authorization = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let request = RecordedRequest {
        body,
        authorization,
    };
    let next = locked(&script.replies)
        .pop_front()
        .or_else(|| script.responder.as_ref().map(|respond| respond(&request)));
    locked(&script.requests).push(request);
    match next {
        Some(reply) => {
            if !reply.delay.is_zero() {
                tokio::time::sleep(reply.delay).await;
            }
            reply.into_response()
        }
        None => ScriptedReply::status(500, "script exhausted").into_response(),
    }
}
