//! The lab MCP server: serves one scenario's world over real MCP (rmcp), with the tool names and
//! argument shapes of the real servers' profiles (kubernetes-mcp-server, prometheus-mcp-server,
//! mcp-grafana), so one Firstline configuration works against the lab and production alike.
//!
//! Two endpoints serve one shared world ([`LabWorld`]): the read-only one (`/mcp`), like
//! kubernetes-mcp-server run with `--read-only`, and the write one (`/write/mcp`), like the
//! separate write-capable server, which also serves `resources_create_or_update`,
//! `resources_scale` and `pods_delete` (`crate::write`). A write is seen by every later read on
//! either endpoint.
//!
//! - `raw_tool_results` are checked first (tool name or `*`, arguments as a subset; a
//!   `namespace` key is the subset `{namespace: …}`): they answer verbatim, fail with a tool
//!   error, or wait `delay_ms` first — fault injection, on both endpoints. Tool names that only
//!   appear there (a peer fixture's `kubectl_describe`) are listed as tools too — never a write
//!   tool's on the read-only endpoint.
//! - Every `tools/call` is counted per tool name, before anything else happens, so tests can
//!   prove a call was (or was not) sent: [`CallCounts`] in-process, `GET /calls` over HTTP; the
//!   writes that changed the world are listed too: [`Writes`], `GET /writes`.
//! - A tool that is not served answers JSON-RPC `-32602` (invalid params), like rmcp's router;
//!   on the read-only endpoint, the write tools are not served.
//!
//! `tools` is the table of served tools, `counts` what tests count, `world` the shared world.

mod counts;
mod tools;
mod world;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::render::Rendered;
use crate::scenario::{RawToolResult, Scenario};
use crate::write::WriteTool;

pub use counts::{CallCounts, Writes};
pub use tools::served_tool_names;
pub use world::LabWorld;

/// An MCP server over one scenario's world: read-only, or also serving the write tools.
#[derive(Clone)]
pub struct LabServer {
    world: LabWorld,
    writable: bool,
}

impl LabServer {
    /// A read-only server for `scenario`, over a world of its own.
    pub fn new(scenario: Scenario) -> Self {
        Self::over(LabWorld::new(scenario), false)
    }

    /// A server over a shared world; `writable` serves the write tools too.
    pub fn over(world: LabWorld, writable: bool) -> Self {
        Self { world, writable }
    }

    /// The shared call counter.
    pub fn counts(&self) -> CallCounts {
        self.world.counts()
    }

    /// The world it serves.
    pub fn world(&self) -> LabWorld {
        self.world.clone()
    }

    fn tools(&self) -> Vec<Tool> {
        let tool = |name: &str, description: &str, schema: Value| {
            let schema = match schema {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            Tool::new(name.to_string(), description.to_string(), Arc::new(schema))
        };
        let mut tools: Vec<Tool> = tools::served()
            .into_iter()
            .map(|s| tool(s.name, s.description, (s.schema)()))
            .collect();
        if self.writable {
            for w in tools::write_served() {
                tools.push(tool(w.tool.name(), w.description, (w.schema)()));
            }
        }
        let raw_only: Vec<String> = self.world.read(|s| {
            s.spec
                .raw_tool_results
                .iter()
                .map(|r| r.tool.clone())
                .filter(|name| name != "*" && WriteTool::named(name).is_none())
                .collect()
        });
        for name in raw_only {
            if !tools.iter().any(|t| t.name == name) {
                let schema = json!({"type": "object", "additionalProperties": true});
                tools.push(tool(
                    &name,
                    "A recorded tool result served by the lab",
                    schema,
                ));
            }
        }
        tools
    }

    /// The answer for one call: an override, or the world rendered (or changed, for a write
    /// tool); `Err` is a tool error, `None` a tool this server does not serve.
    pub async fn answer(&self, tool: &str, args: &Map<String, Value>) -> Option<Rendered> {
        let write = WriteTool::named(tool);
        if write.is_some() && !self.writable {
            return None;
        }
        if let Some(raw) = self.world.override_for(tool, args) {
            if let Some(delay) = raw.delay_ms {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            if let Some(error) = &raw.error {
                return Some(Err(error.clone()));
            }
            if let Some(text) = &raw.text {
                return Some(Ok(text.clone()));
            }
        }
        if let Some(write) = write {
            return Some(self.world.write(write, args));
        }
        if let Some(served) = tools::served().into_iter().find(|s| s.name == tool) {
            return Some(self.world.read(|s| (served.handler)(s, args)));
        }
        // A tool that exists only through overrides, called with other arguments.
        self.world
            .read(|s| s.spec.raw_tool_results.iter().any(|r| r.tool == tool))
            .then(|| {
                Err(format!(
                    "the lab has no recorded result of `{tool}` for these arguments"
                ))
            })
    }
}

/// JSON equality, but a string matches a number or bool with the same text (`"5"` ~ `5`).
fn loosely_equal(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::String(a), Value::Number(_) | Value::Bool(_)) => {
            a.as_str() == got.to_string().as_str()
        }
        (Value::Number(_) | Value::Bool(_), Value::String(b)) => {
            want.to_string().as_str() == b.as_str()
        }
        _ => want == got,
    }
}

fn find_override<'a>(
    overrides: &'a [RawToolResult],
    tool: &str,
    args: &Map<String, Value>,
) -> Option<&'a RawToolResult> {
    overrides.iter().find(|raw| {
        (raw.tool == tool || raw.tool == "*")
            && raw
                .args
                .iter()
                .all(|(k, want)| args.get(k).is_some_and(|got| loosely_equal(want, got)))
    })
}

impl ServerHandler for LabServer {
    fn get_info(&self) -> ServerConfig {
        let instructions = if self.writable {
            "Firstline lab (write endpoint): serves one incident scenario with the real servers' tool names, and changes it through the write tools"
        } else {
            "Firstline lab: serves one incident scenario with the real servers' tool names"
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        self.world.counts().record(&tool);
        let args = request.arguments.unwrap_or_default();
        match self.answer(&tool, &args).await {
            None => Err(ErrorData::invalid_params(
                format!("tool not found: {tool}"),
                None,
            )),
            Some(Ok(text)) => Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into()),
            Some(Err(error)) => Ok(CallToolResult::error(vec![ContentBlock::text(error)]).into()),
        }
    }
}

/// A running HTTP lab server.
#[derive(Debug)]
pub struct LabHandle {
    /// Where it listens.
    pub addr: SocketAddr,
    world: LabWorld,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl LabHandle {
    /// The read-only streamable HTTP MCP endpoint, `http://addr/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The write endpoint, `http://addr/write/mcp`: the read tools plus
    /// `resources_create_or_update`, `resources_scale` and `pods_delete`, over the same world.
    pub fn write_url(&self) -> String {
        format!("http://{}/write/mcp", self.addr)
    }

    /// The call-count endpoint, `http://addr/calls` (JSON `{tool: count}`).
    pub fn calls_url(&self) -> String {
        format!("http://{}/calls", self.addr)
    }

    /// The writes endpoint, `http://addr/writes` (a JSON list of [`crate::write::AppliedWrite`],
    /// oldest first).
    pub fn writes_url(&self) -> String {
        format!("http://{}/writes", self.addr)
    }

    /// Calls received so far, per tool (both endpoints).
    pub fn counts(&self) -> CallCounts {
        self.world.counts()
    }

    /// The writes that changed the world so far.
    pub fn writes(&self) -> Writes {
        self.world.writes()
    }

    /// Makes the write tools refuse as RBAC does (`true`) or accept (`false`), overriding the
    /// scenario's `writes.forbidden`.
    pub fn forbid_writes(&self, forbidden: bool) {
        self.world.forbid_writes(forbidden);
    }

    /// The world as it is now, every write applied.
    pub fn scenario(&self) -> Scenario {
        self.world.scenario()
    }

    /// The shared world.
    pub fn world(&self) -> LabWorld {
        self.world.clone()
    }

    /// Stops the server and waits for it.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let _ = self.task.await;
    }
}

/// The streamable HTTP service of one endpoint.
fn service(
    server: LabServer,
    config: StreamableHttpServerConfig,
) -> StreamableHttpService<LabServer, LocalSessionManager> {
    StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config)
}

/// Serves `scenario` over streamable HTTP at `addr` (port 0 picks a free one): the read-only MCP
/// endpoint at `/mcp`, the write endpoint at `/write/mcp` (one world behind both), call counts
/// at `GET /calls`, the writes that changed the world at `GET /writes`.
pub async fn serve_http(scenario: Scenario, addr: SocketAddr) -> std::io::Result<LabHandle> {
    let world = LabWorld::new(scenario);
    let shutdown = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(None)
        .with_cancellation_token(shutdown.child_token());
    if !addr.ip().is_loopback() {
        let mut hosts = config.allowed_hosts.clone();
        hosts.push(addr.ip().to_string());
        config = config.with_allowed_hosts(hosts);
    }
    let read = service(LabServer::over(world.clone(), false), config.clone());
    let write = service(LabServer::over(world.clone(), true), config);
    let calls = world.counts();
    let writes = world.writes();
    let router = axum::Router::new()
        .nest_service("/mcp", read)
        .nest_service("/write/mcp", write)
        .route(
            "/calls",
            axum::routing::get(move || {
                let calls = calls.clone();
                async move { axum::Json(calls.snapshot()) }
            }),
        )
        .route(
            "/writes",
            axum::routing::get(move || {
                let writes = writes.clone();
                async move { axum::Json(writes.all()) }
            }),
        );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        // Without TCP_NODELAY each streamed MCP answer waits out the client's delayed ACK
        // (~40 ms a tool call).
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "lab MCP server could not set TCP_NODELAY");
            }
        });
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled_owned().await })
            .await;
        if let Err(error) = served {
            tracing::warn!(%error, "lab MCP server stopped with an error");
        }
    });
    tracing::info!(%addr, "lab MCP server listening");
    Ok(LabHandle {
        addr,
        world,
        shutdown,
        task,
    })
}

/// Serves `scenario` over stdio until the client disconnects (read-only).
pub async fn serve_stdio(scenario: Scenario) -> Result<(), LabServeError> {
    serve_stdio_with(LabServer::new(scenario)).await
}

/// Serves `scenario` over stdio with the write tools too, until the client disconnects.
pub async fn serve_stdio_writable(scenario: Scenario) -> Result<(), LabServeError> {
    serve_stdio_with(LabServer::over(LabWorld::new(scenario), true)).await
}

async fn serve_stdio_with(server: LabServer) -> Result<(), LabServeError> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| LabServeError(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| LabServeError(e.to_string()))?;
    Ok(())
}

/// The stdio server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[error("lab MCP server (stdio): {0}")]
pub struct LabServeError(String);

#[cfg(test)]
mod tests {
    use super::*;

    fn overrides() -> Vec<RawToolResult> {
        serde_norway::from_str(
            r#"
- {tool: pods_log, args: {previous: true, tail: "50"}, text: "recorded"}
- {tool: "*", error: "boom"}
"#,
        )
        .unwrap()
    }

    #[test]
    fn overrides_match_by_tool_and_argument_subset() {
        let o = overrides();
        let args = |v: Value| v.as_object().cloned().unwrap();
        let hit = find_override(
            &o,
            "pods_log",
            &args(json!({"name": "x", "previous": true, "tail": 50})),
        )
        .unwrap();
        assert_eq!(hit.text.as_deref(), Some("recorded"));
        let wildcard = find_override(&o, "pods_log", &args(json!({"name": "x"}))).unwrap();
        assert_eq!(wildcard.error.as_deref(), Some("boom"));
        assert!(find_override(&o[..1], "pods_get", &args(json!({}))).is_none());
    }

    #[tokio::test]
    async fn a_namespaced_override_answers_only_calls_in_its_namespace() {
        let text = r#"
alert: {text: x}
pods: [{name: p, namespace: shop, node: n, containers: [{name: c, image: i}]}]
raw_tool_results:
  - {tool: "*", namespace: shop, error: "the API server is overloaded"}
expect: {verdict: ask}
"#;
        let scenario = Scenario::parse("t", std::path::Path::new("t"), text, chrono::Utc::now())
            .expect("loads");
        let lab = LabServer::new(scenario);
        let call = |args: Value| {
            let lab = lab.clone();
            async move {
                lab.answer("pods_get", args.as_object().unwrap())
                    .await
                    .unwrap()
            }
        };
        let shop = call(json!({"namespace": "shop", "name": "p"})).await;
        assert_eq!(shop, Err("the API server is overloaded".to_string()));
        let elsewhere = call(json!({"namespace": "web", "name": "p"})).await;
        assert!(elsewhere.unwrap_err().contains("not found"));
        let unscoped = call(json!({"name": "p"})).await;
        assert!(unscoped.unwrap().contains("kind: Pod"));
    }
}
