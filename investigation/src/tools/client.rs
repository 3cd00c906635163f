//! MCP client connections (rmcp): one per configured server, opened lazily on first use.
//!
//! Connecting means starting the child process (stdio) or opening a streamable HTTP session,
//! then listing the server's tools — all within the connect timeout. A failed connection is
//! remembered for [`RETRY_AFTER`], so a server that is down costs one timeout per round, not one
//! per step. A connection whose transport closed is dropped and reopened on the next call.
//!
//! MCP servers are reached over streamable HTTP, plain or over TLS with credentials (`http.rs`),
//! or over stdio.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{ClientInitializeError, RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::StreamableHttpError;
use serde_json::{Map, Value};
use tokio::io::AsyncBufReadExt;
use tokio::sync::Mutex;
use tracing::Instrument;

use super::setup::{ServerSpec, Transport};
use firstline_redact::redact;

/// How long a failed connection attempt is remembered before trying again.
pub(crate) const RETRY_AFTER: Duration = Duration::from_secs(30);

type Client = RunningService<RoleClient, ()>;

struct Connected {
    client: Client,
    tools: BTreeSet<String>,
}

enum State {
    Idle,
    Ready(Arc<Connected>),
    Failed { at: Instant, reason: String },
}

/// Why a call produced no result. Each message says what to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallFailure {
    /// Could not connect, start or list tools.
    Unavailable(String),
    /// Connected, but the server does not offer the tool.
    NoSuchTool(String),
    /// No answer within the call timeout.
    Timeout(Duration),
    /// A JSON-RPC error or a transport failure during the call.
    Protocol(String),
}

/// One server's connection.
pub(crate) struct Connection {
    pub spec: ServerSpec,
    state: Mutex<State>,
}

impl Connection {
    pub fn new(spec: ServerSpec) -> Self {
        Self {
            spec,
            state: Mutex::new(State::Idle),
        }
    }

    async fn connected(&self) -> Result<Arc<Connected>, CallFailure> {
        let mut state = self.state.lock().await;
        match &*state {
            State::Ready(connected) if !connected.client.is_transport_closed() => {
                return Ok(connected.clone());
            }
            State::Failed { at, reason } if at.elapsed() < RETRY_AFTER => {
                return Err(CallFailure::Unavailable(reason.clone()));
            }
            _ => {}
        }
        let timeout = self.spec.connect_timeout;
        let outcome = match tokio::time::timeout(timeout, connect(&self.spec)).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "no answer within {} s while connecting (mcp.connect_timeout_secs)",
                timeout.as_secs()
            )),
        };
        match outcome {
            Ok(connected) => {
                let connected = Arc::new(connected);
                tracing::debug!(server = %self.spec.name, tools = connected.tools.len(), "connected to MCP server");
                *state = State::Ready(connected.clone());
                Ok(connected)
            }
            Err(reason) => {
                let reason = format!(
                    "MCP server `{}` ({:?}) is unavailable: {reason}",
                    self.spec.name, self.spec.transport
                );
                tracing::warn!(server = %self.spec.name, %reason, "MCP connection failed");
                *state = State::Failed {
                    at: Instant::now(),
                    reason: reason.clone(),
                };
                Err(CallFailure::Unavailable(reason))
            }
        }
    }

    /// The tools the server offers (connecting if needed).
    pub async fn tools(&self) -> Result<BTreeSet<String>, CallFailure> {
        Ok(self.connected().await?.tools.clone())
    }

    /// Calls one tool within the call timeout. The caller has already checked the allowlist.
    pub async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<CallToolResult, CallFailure> {
        let connected = self.connected().await?;
        if !connected.tools.contains(tool) {
            let offered: Vec<&str> = connected.tools.iter().map(String::as_str).collect();
            return Err(CallFailure::NoSuchTool(format!(
                "MCP server `{}` does not offer tool `{tool}` (it offers: {})",
                self.spec.name,
                offered.join(", ")
            )));
        }
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let timeout = self.spec.call_timeout;
        // Dropping the request on timeout sends the server a cancellation.
        match tokio::time::timeout(timeout, connected.client.call_tool(params)).await {
            Err(_) => Err(CallFailure::Timeout(timeout)),
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => {
                if matches!(
                    error,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                ) {
                    *self.state.lock().await = State::Idle;
                }
                Err(CallFailure::Protocol(describe(&error)))
            }
        }
    }

    /// Closes the connection (ends a stdio child process).
    pub async fn close(&self) {
        let mut state = self.state.lock().await;
        if let State::Ready(connected) = std::mem::replace(&mut *state, State::Idle) {
            connected.client.cancellation_token().cancel();
        }
    }
}

fn describe(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(data) => {
            format!(
                "JSON-RPC error {}: {}",
                data.code.0,
                redact(&data.message).text
            )
        }
        other => redact(&firstline_llm::error_chain(other)).text,
    }
}

/// Why a session could not start; rmcp's transport error keeps its causes out of the chain.
fn init_failure(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            let http = match error
                .error
                .downcast_ref::<StreamableHttpError<reqwest::Error>>()
            {
                Some(StreamableHttpError::Client(http)) => Some(firstline_llm::error_chain(http)),
                _ => None,
            };
            match http {
                Some(http) => format!("{http}, when {context}"),
                None => format!("{}, when {context}", firstline_llm::error_chain(error)),
            }
        }
        other => firstline_llm::error_chain(other),
    }
}

async fn connect(spec: &ServerSpec) -> Result<Connected, String> {
    // rmcp's session task lives as long as the connection and keeps the span it was started in:
    // a session of its own, not the first tool call's span (which would then stay open, with
    // its round's spans above it, until the connection closes).
    let session = tracing::info_span!(parent: None, "mcp.session", server = %spec.name);
    let client: Client = match &spec.transport {
        Transport::Http(endpoint) => {
            let transport = super::http::transport(endpoint)?;
            ().serve(transport)
                .instrument(session)
                .await
                .map_err(|e| redact(&init_failure(&e)).text)?
        }
        Transport::Stdio { command, args, env } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).kill_on_drop(true);
            // Our own settings (tokens, database URL) are not the child's business.
            for (key, _) in std::env::vars_os() {
                if key
                    .to_string_lossy()
                    .starts_with(firstline_config::ENV_PREFIX)
                {
                    cmd.env_remove(&key);
                }
            }
            cmd.envs(env);
            let (transport, stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            if let Some(stderr) = stderr {
                let server = spec.name.clone();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tracing::debug!(server = %server, line = %redact(&line).text, "MCP server stderr");
                    }
                });
            }
            ().serve(transport)
                .instrument(session)
                .await
                .map_err(|e| redact(&init_failure(&e)).text)?
        }
    };
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| format!("listing tools failed: {}", describe(&e)))?
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect();
    Ok(Connected { client, tools })
}
