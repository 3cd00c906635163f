//! The MCP tool layer: [`McpTools`] holds the configured servers (connected lazily) and the
//! capability bindings; [`RoundTools`] is one round's view of it and implements
//! [`EvidenceSource`].
//!
//! Every call goes through the same gate, in this order:
//!
//! 1. **Allowlist** (invariant 7): a tool not on its server's `allow` list is never sent —
//!    whoever asks, a fixed step or a model. The refusal is audited (`tool_refused`/`refused`)
//!    and comes back as missing evidence.
//! 2. **Cache**: the digest of (scope = thread + round, server, tool, canonical args) is looked
//!    up in this round's memory, then in `tool_cache`. A hit is returned with `cached: true` and
//!    audited as `cached`; the server is not called. Concurrent identical calls share one call.
//! 3. **Call** with the server's timeout; the result is redacted, capped and marked, stored in
//!    `tool_cache` and audited (`tool_call`, outcome `ok`/`error`/`timeout`) with its duration,
//!    redacted arguments and sizes.
//!
//! A tool error, JSON-RPC error, transport failure, unknown tool or timeout becomes
//! [`Fetched::Missing`] with a reason an on-call engineer can act on; nothing here panics or
//! aborts a round. Without a database (`firstline investigate` with no Postgres) there is no
//! persistent cache and no audit trail; the in-memory cache still serves the round.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use chrono::Utc;
use firstline_config::McpSettings;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use tokio::sync::OnceCell;
use tracing::Instrument;

use super::client::{CallFailure, Connection};
use super::output::{clean, redact_args, result_text};
use super::record::{self, AuditRow};
use super::setup::{self, Binding, ToolConfigError, capability_key};
use super::template;
use super::{CapabilityRequest, EvidenceSource, Fetched, ToolOutput};
use crate::evidence::{Capability, MissingEvidence, call_digest};

/// Where a call belongs: the cache scope and the audit trail's thread and round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallScope {
    /// Identifies thread and round in the cache digest, e.g. `T123-C456-1712.0001#2`.
    pub key: String,
    /// `threads.id`, when the thread is recorded (audit rows reference it).
    pub thread_id: Option<i64>,
    /// Round number (≥ 1), when there is one.
    pub round: Option<i32>,
}

impl CallScope {
    /// The scope of round `round` of a recorded thread.
    pub fn round(thread_key: &str, thread_id: Option<i64>, round: u32) -> Self {
        Self {
            key: format!("{thread_key}#{round}"),
            thread_id,
            round: i32::try_from(round).ok().filter(|r| *r >= 1),
        }
    }

    /// A scope outside any thread (`firstline investigate`, tests): calls are cached only
    /// within this scope's key.
    pub fn adhoc(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            thread_id: None,
            round: None,
        }
    }

    /// The cache key of a call in this scope.
    pub fn digest(&self, server: &str, tool: &str, args: &Value) -> String {
        let call = call_digest(server, tool, args);
        let mut hasher = Sha256::new();
        for part in [self.key.as_str(), call.as_str()] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part.as_bytes());
        }
        hex::encode(hasher.finalize())
    }
}

/// A tool as a server lists it, for a model's ReAct leaf (allowlisted tools only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedTool {
    pub server: String,
    pub tool: String,
}

struct Inner {
    servers: BTreeMap<String, Connection>,
    bindings: BTreeMap<&'static str, Binding>,
    pool: Option<PgPool>,
}

/// What runs after a tool was called and its result cached, before the caller sees it: a seam
/// for the host (the worker's crash tests pause there), never used for the result itself.
pub type AfterCall = Arc<dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// The configured MCP servers and capability bindings. Cheap to clone; connections are shared
/// and opened on first use. Build one per process and a [`RoundTools`] per round.
#[derive(Clone)]
pub struct McpTools {
    inner: Arc<Inner>,
    actor: Arc<str>,
    after_call: Option<AfterCall>,
}

impl std::fmt::Debug for McpTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTools")
            .field("servers", &self.inner.servers.keys().collect::<Vec<_>>())
            .field("bindings", &self.inner.bindings)
            .field("database", &self.inner.pool.is_some())
            .finish()
    }
}

impl McpTools {
    /// Resolves the settings (profiles, bindings, allowlists, templates). `pool` is where the
    /// cache and audit trail live; `None` runs without either.
    pub fn from_settings(
        settings: &McpSettings,
        pool: Option<PgPool>,
    ) -> Result<Self, ToolConfigError> {
        let plan = setup::plan(settings)?;
        let servers = plan
            .servers
            .into_iter()
            .map(|(name, spec)| (name, Connection::new(spec)))
            .collect();
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
        Ok(Self {
            inner: Arc::new(Inner {
                servers,
                bindings: plan.bindings,
                pool,
            }),
            actor: Arc::from(format!("firstline@{host}")),
            after_call: None,
        })
    }

    /// Runs `hook` after every tool call this process makes (not after cache hits).
    pub fn with_after_call(mut self, hook: AfterCall) -> Self {
        self.after_call = Some(hook);
        self
    }

    /// Sets the `actor` recorded in audit rows (default `firstline@$HOSTNAME`).
    pub fn with_actor(mut self, actor: impl Into<String>) -> Self {
        self.actor = Arc::from(actor.into());
        self
    }

    /// This process's view for one round: calls are cached and audited under `scope`.
    pub fn round(&self, scope: CallScope) -> RoundTools {
        RoundTools {
            tools: self.clone(),
            scope: Arc::new(scope),
            memory: Arc::new(std::sync::Mutex::new(HashMap::new())),
            calls: Arc::new(AtomicU32::new(0)),
        }
    }

    /// The (server, tool) a capability is bound to, if any.
    pub fn binding(&self, capability: &Capability) -> Option<(&str, &str)> {
        let binding = self.inner.bindings.get(capability_key(capability)?)?;
        Some((binding.server.as_str(), binding.tool.as_str()))
    }

    /// Allowlisted tools the servers actually offer (connecting as needed); unreachable
    /// servers are skipped. For a model's tool list.
    pub async fn allowed_tools(&self) -> Vec<ListedTool> {
        let mut listed = Vec::new();
        for (name, connection) in &self.inner.servers {
            if let Ok(offered) = connection.tools().await {
                listed.extend(
                    offered
                        .into_iter()
                        .filter(|tool| connection.spec.allow.contains(tool))
                        .map(|tool| ListedTool {
                            server: name.clone(),
                            tool,
                        }),
                );
            }
        }
        listed
    }

    /// Closes every connection (ends stdio child processes).
    pub async fn shutdown(&self) {
        for connection in self.inner.servers.values() {
            connection.close().await;
        }
    }
}

type Memory = std::sync::Mutex<HashMap<String, Arc<OnceCell<Fetched>>>>;

/// One round's tool access: an [`EvidenceSource`] whose calls share the round's cache scope.
/// Cheap to clone; clones share the in-memory cache and the call counter.
#[derive(Clone)]
pub struct RoundTools {
    tools: McpTools,
    scope: Arc<CallScope>,
    memory: Arc<Memory>,
    calls: Arc<AtomicU32>,
}

impl std::fmt::Debug for RoundTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundTools")
            .field("scope", &self.scope)
            .field("calls", &self.calls_made())
            .finish()
    }
}

fn missing(capability: &Capability, reason: impl Into<String>) -> Fetched {
    Fetched::Missing(MissingEvidence {
        capability: capability.clone(),
        reason: reason.into(),
    })
}

impl RoundTools {
    /// The scope this round's calls are cached and audited under.
    pub fn scope(&self) -> &CallScope {
        &self.scope
    }

    /// Calls actually sent to a server this round (cache hits and refusals excluded).
    pub fn calls_made(&self) -> u32 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Calls `tool` on `server` with `args` through the allowlist, cache, limits, redaction and
    /// audit — the path a model's tool calls take. `capability` labels the evidence.
    pub async fn call(
        &self,
        capability: Capability,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Fetched {
        let span = tracing::info_span!("tool.call", server, tool);
        self.call_inner(capability, server, tool, args)
            .instrument(span)
            .await
    }

    async fn call_inner(
        &self,
        capability: Capability,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Fetched {
        let inner = &self.tools.inner;
        let args = Value::Object(args);
        let shown_args = redact_args(&args);
        let Some(connection) = inner.servers.get(server) else {
            return missing(
                &capability,
                format!("no MCP server named `{server}` is configured (mcp.servers)"),
            );
        };
        if !connection.spec.allow.contains(tool) {
            tracing::warn!("tool refused: not on the server's allowlist");
            self.audit(
                "tool_refused",
                server,
                tool,
                "refused",
                None,
                json!({"args": shown_args}),
            )
            .await;
            return missing(
                &capability,
                format!(
                    "tool `{tool}` on MCP server `{server}` is not on its allowlist \
                     (mcp.servers[].allow), so it was not called"
                ),
            );
        }
        let digest = self.scope.digest(server, tool, &args);
        let cell = {
            let mut memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
            memory.entry(digest.clone()).or_default().clone()
        };
        let mut ran = false;
        let fetched = cell
            .get_or_init(|| {
                ran = true;
                self.fetch_once(
                    capability.clone(),
                    connection,
                    tool,
                    &digest,
                    args.clone(),
                    shown_args.clone(),
                )
            })
            .await
            .clone();
        if ran {
            if let Some(hook) = &self.tools.after_call {
                hook().await;
            }
            return fetched;
        }
        // Served from this round's memory: an identical call was already made (or is shared).
        self.audit(
            "tool_call",
            server,
            tool,
            "cached",
            Some(0),
            json!({"args": shown_args, "source": "memory"}),
        )
        .await;
        match fetched {
            Fetched::Found(mut output) => {
                output.cached = true;
                output.capability = capability;
                Fetched::Found(output)
            }
            Fetched::Missing(mut gap) => {
                gap.capability = capability;
                Fetched::Missing(gap)
            }
        }
    }

    /// The database cache, then the server. Runs at most once per digest per round.
    async fn fetch_once(
        &self,
        capability: Capability,
        connection: &Connection,
        tool: &str,
        digest: &str,
        args: Value,
        shown_args: Value,
    ) -> Fetched {
        let spec = &connection.spec;
        let server = spec.name.as_str();
        let pool = self.tools.inner.pool.as_ref();
        if let Some(pool) = pool
            && let Some(hit) = record::cached(pool, digest).await
        {
            self.audit(
                "tool_call",
                server,
                tool,
                "cached",
                Some(0),
                json!({"args": shown_args, "source": "tool_cache", "result_bytes": hit.result.len()}),
            )
            .await;
            return if hit.is_error {
                missing(&capability, tool_error_reason(server, tool, &hit.result))
            } else {
                Fetched::Found(ToolOutput {
                    capability,
                    server: server.to_string(),
                    tool: tool.to_string(),
                    args: shown_args,
                    text: hit.result,
                    fetched_at: hit.created_at,
                    cached: true,
                })
            };
        }

        let Value::Object(arg_map) = args else {
            return missing(&capability, "tool arguments must be a JSON object");
        };
        let started = Instant::now();
        let fetched_at = Utc::now();
        self.calls.fetch_add(1, Ordering::Relaxed);
        let outcome = connection.call(tool, arg_map).await;
        let duration_ms = i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX);
        match outcome {
            Ok(result) => {
                let is_error = result.is_error == Some(true);
                let text = clean(&result_text(&result), spec.max_result_bytes);
                let detail = json!({
                    "args": shown_args,
                    "result_bytes": text.original_bytes,
                    "stored_bytes": text.text.len(),
                    "truncated": text.truncated,
                    "redactions": text.redactions,
                });
                if let Some(pool) = pool {
                    record::store(
                        pool,
                        digest,
                        server,
                        tool,
                        &shown_args,
                        is_error,
                        &text.text,
                        fetched_at,
                    )
                    .await;
                }
                let outcome = if is_error { "error" } else { "ok" };
                tracing::debug!(
                    duration_ms,
                    outcome,
                    bytes = text.original_bytes,
                    truncated = text.truncated,
                    "tool call finished"
                );
                self.audit(
                    "tool_call",
                    server,
                    tool,
                    outcome,
                    Some(duration_ms),
                    detail,
                )
                .await;
                if is_error {
                    missing(&capability, tool_error_reason(server, tool, &text.text))
                } else {
                    Fetched::Found(ToolOutput {
                        capability,
                        server: server.to_string(),
                        tool: tool.to_string(),
                        args: shown_args,
                        text: text.text,
                        fetched_at,
                        cached: false,
                    })
                }
            }
            Err(failure) => {
                let (outcome, reason) = match failure {
                    CallFailure::Timeout(limit) => (
                        "timeout",
                        format!(
                            "`{tool}` on MCP server `{server}` did not answer within {} s \
                             (mcp.call_timeout_secs); the server or what it queries may be overloaded",
                            limit.as_secs()
                        ),
                    ),
                    CallFailure::Unavailable(reason) | CallFailure::NoSuchTool(reason) => {
                        ("error", reason)
                    }
                    CallFailure::Protocol(reason) => (
                        "error",
                        format!("`{tool}` on MCP server `{server}` failed: {reason}"),
                    ),
                };
                tracing::warn!(duration_ms, outcome, %reason, "tool call failed");
                self.audit(
                    "tool_call",
                    server,
                    tool,
                    outcome,
                    Some(duration_ms),
                    json!({"args": shown_args, "error": reason}),
                )
                .await;
                missing(&capability, reason)
            }
        }
    }

    async fn audit(
        &self,
        action: &'static str,
        server: &str,
        tool: &str,
        outcome: &'static str,
        duration_ms: Option<i32>,
        detail: Value,
    ) {
        let inner = &self.tools.inner;
        if let Some(pool) = &inner.pool {
            record::audit(
                pool,
                AuditRow {
                    actor: &self.tools.actor,
                    thread_id: self.scope.thread_id,
                    round_number: self.scope.round,
                    action,
                    target: format!("{server}/{tool}"),
                    outcome,
                    duration_ms,
                    detail,
                },
            )
            .await;
        }
    }
}

/// The most an unredacted read may return: a write is never computed from a cut object.
const MAX_RAW_BYTES: usize = 1024 * 1024;

/// What a write-capable tool call came to. Unlike a read, whether it may have changed something
/// matters: a write that was never sent can be reported as such, one whose answer was lost must
/// be checked against the object before anything is sent again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// The server answered without error: its answer.
    Applied(String),
    /// The server refused (RBAC, a conflict, a validation error): its words. Nothing changed.
    Refused(String),
    /// Never sent: not on the allowlist, not configured, or the server could not be reached.
    NotSent(String),
    /// Sent, and no answer came back (a timeout, a broken transport): it may have been applied.
    Unknown(String),
}

impl RoundTools {
    /// Sends one write (`tool` with `args`) to `server` through its allowlist, bounded and
    /// audited (action `tool_write`). Its answer is stored under the scope's digest, so a retry
    /// of the same write in the same scope gets the first answer back instead of writing again;
    /// never served from the in-memory cache reads share.
    pub async fn write(&self, server: &str, tool: &str, args: Map<String, Value>) -> Written {
        let span = tracing::info_span!("tool.write", server, tool);
        self.write_inner(server, tool, args).instrument(span).await
    }

    /// Reads through `tool` on `server` as the server answered: unredacted and uncached, for a
    /// write computed from the object (a redacted value written back would destroy it). The
    /// text is never stored or logged by this layer; the call is audited (`tool_read_raw`).
    /// `Err`: why nothing was read (a tool error keeps the server's words).
    pub async fn read_raw(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<String, String> {
        let span = tracing::info_span!("tool.read_raw", server, tool);
        async {
            let inner = &self.tools.inner;
            let shown_args = redact_args(&Value::Object(args.clone()));
            let Some(connection) = inner.servers.get(server) else {
                return Err(format!("no MCP server named `{server}` is configured"));
            };
            if !connection.spec.allow.contains(tool) {
                return Err(format!(
                    "tool `{tool}` on MCP server `{server}` is not on its allowlist"
                ));
            }
            let started = Instant::now();
            self.calls.fetch_add(1, Ordering::Relaxed);
            let outcome = connection.call(tool, args).await;
            let duration_ms = i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX);
            let (audited, read) = match outcome {
                Ok(result) if result.is_error == Some(true) => (
                    "error",
                    Err(tool_error_reason(
                        server,
                        tool,
                        &firstline_redact::redact(&result_text(&result)).text,
                    )),
                ),
                Ok(result) => {
                    let text = result_text(&result);
                    if text.len() > MAX_RAW_BYTES {
                        (
                            "error",
                            Err(format!(
                                "`{tool}` on MCP server `{server}` answered {} bytes, more than the {MAX_RAW_BYTES} a write is computed from",
                                text.len()
                            )),
                        )
                    } else {
                        ("ok", Ok(text))
                    }
                }
                Err(CallFailure::Timeout(limit)) => (
                    "timeout",
                    Err(format!(
                        "`{tool}` on MCP server `{server}` did not answer within {} s",
                        limit.as_secs()
                    )),
                ),
                Err(CallFailure::Unavailable(reason) | CallFailure::NoSuchTool(reason)) => {
                    ("error", Err(reason))
                }
                Err(CallFailure::Protocol(reason)) => (
                    "error",
                    Err(format!(
                        "`{tool}` on MCP server `{server}` failed: {reason}"
                    )),
                ),
            };
            self.audit(
                "tool_read_raw",
                server,
                tool,
                audited,
                Some(duration_ms),
                json!({"args": shown_args}),
            )
            .await;
            read
        }
        .instrument(span)
        .await
    }

    async fn write_inner(&self, server: &str, tool: &str, args: Map<String, Value>) -> Written {
        let inner = &self.tools.inner;
        let args = Value::Object(args);
        // A write's body (a whole object) is named by its size and digest, never kept: an object
        // may hold literal credentials no redaction rule knows.
        let shown_args = write_summary(&args);
        let Some(connection) = inner.servers.get(server) else {
            return Written::NotSent(format!("no MCP server named `{server}` is configured"));
        };
        if !connection.spec.allow.contains(tool) {
            self.audit(
                "tool_write",
                server,
                tool,
                "refused",
                None,
                json!({"args": shown_args}),
            )
            .await;
            return Written::NotSent(format!(
                "tool `{tool}` on MCP server `{server}` is not on its allowlist, so it was not called"
            ));
        }
        let digest = self.scope.digest(server, tool, &args);
        if let Some(pool) = inner.pool.as_ref()
            && let Some(hit) = record::cached(pool, &digest).await
        {
            self.audit(
                "tool_write",
                server,
                tool,
                "cached",
                Some(0),
                json!({"args": shown_args, "source": "tool_cache"}),
            )
            .await;
            return if hit.is_error {
                Written::Refused(hit.result)
            } else {
                Written::Applied(hit.result)
            };
        }
        let Value::Object(arg_map) = args else {
            return Written::NotSent("tool arguments must be a JSON object".into());
        };
        let started = Instant::now();
        let fetched_at = Utc::now();
        self.calls.fetch_add(1, Ordering::Relaxed);
        let outcome = connection.call(tool, arg_map).await;
        let duration_ms = i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX);
        let written = match outcome {
            Ok(result) => {
                let is_error = result.is_error == Some(true);
                // The answer to a write is the object written: only its first line is kept.
                let text = clean(&result_text(&result), connection.spec.max_result_bytes);
                let said = first_line(&text.text);
                if let Some(pool) = inner.pool.as_ref() {
                    record::store(
                        pool,
                        &digest,
                        server,
                        tool,
                        &shown_args,
                        is_error,
                        &said,
                        fetched_at,
                    )
                    .await;
                }
                if is_error {
                    Written::Refused(said)
                } else {
                    Written::Applied(said)
                }
            }
            Err(CallFailure::Unavailable(reason) | CallFailure::NoSuchTool(reason)) => {
                Written::NotSent(reason)
            }
            Err(CallFailure::Timeout(limit)) => Written::Unknown(format!(
                "`{tool}` on MCP server `{server}` did not answer within {} s",
                limit.as_secs()
            )),
            Err(CallFailure::Protocol(reason)) => Written::Unknown(format!(
                "`{tool}` on MCP server `{server}` failed mid-call: {reason}"
            )),
        };
        let (outcome, said) = match &written {
            Written::Applied(text) => ("ok", text),
            Written::Refused(text) => ("error", text),
            Written::NotSent(reason) => ("not_sent", reason),
            Written::Unknown(reason) => ("unknown", reason),
        };
        tracing::info!(duration_ms, outcome, "write sent");
        self.audit(
            "tool_write",
            server,
            tool,
            outcome,
            Some(duration_ms),
            json!({"args": shown_args, "answer": said}),
        )
        .await;
        written
    }
}

/// A write's arguments as the audit keeps them: short values redacted, a long one (an object's
/// whole body) by its size and digest.
fn write_summary(args: &Value) -> Value {
    let Value::Object(map) = redact_args(args) else {
        return Value::Null;
    };
    let original = args.as_object();
    let summary = map
        .into_iter()
        .map(|(key, value)| {
            let raw = original.and_then(|o| o.get(&key)).and_then(Value::as_str);
            match raw {
                Some(raw) if raw.len() > 200 => {
                    let digest = hex::encode(Sha256::digest(raw.as_bytes()));
                    (
                        key,
                        json!(format!("({} bytes, sha256 {digest})", raw.len())),
                    )
                }
                _ => (key, value),
            }
        })
        .collect();
    Value::Object(summary)
}

/// The first non-empty line of a server's answer, cut.
fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(no message)");
    firstline_model::text::clip(line, 300, "…")
}

/// A tool's own error, as missing evidence: the text it returned is what to act on.
fn tool_error_reason(server: &str, tool: &str, text: &str) -> String {
    let text = text.trim();
    let text = if text.is_empty() {
        "(no message)"
    } else {
        text
    };
    format!("`{tool}` on MCP server `{server}` returned an error: {text}")
}

impl EvidenceSource for RoundTools {
    fn supports(&self, capability: &Capability) -> bool {
        self.tools.binding(capability).is_some()
    }

    async fn fetch(&self, request: CapabilityRequest) -> Fetched {
        let capability = request.capability();
        let Some(key) = capability_key(&capability) else {
            return missing(&capability, "not a fixed capability");
        };
        let Some(binding) = self.tools.inner.bindings.get(key) else {
            return missing(
                &capability,
                format!(
                    "no MCP tool is configured for {} (set a server profile or mcp.capabilities.{key})",
                    capability.label()
                ),
            );
        };
        let vars = self
            .tools
            .inner
            .servers
            .get(&binding.server)
            .map(|c| c.spec.vars.clone())
            .unwrap_or_default();
        let args = template::render(&binding.args, &template::request_fields(&request), &vars);
        self.call(capability, &binding.server, &binding.tool, args)
            .await
    }
}
