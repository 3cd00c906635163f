//! The lab MCP server: serves one scenario's world over real MCP (rmcp), with the tool names and
//! argument shapes of the real servers' profiles (kubernetes-mcp-server, prometheus-mcp-server,
//! mcp-grafana), so one Firstline configuration works against the lab and production alike.
//!
//! - `raw_tool_results` are checked first (tool name or `*`, arguments as a subset; a
//!   `namespace` key is the subset `{namespace: …}`): they answer verbatim, fail with a tool
//!   error, or wait `delay_ms` first — fault injection. Tool names that only appear there (a
//!   peer fixture's `kubectl_describe`) are listed as tools too.
//! - Every `tools/call` is counted per tool name, before anything else happens, so tests can
//!   prove a call was (or was not) sent: [`CallCounts`] in-process, `GET /calls` over HTTP.
//! - A tool that is not served answers JSON-RPC `-32602` (invalid params), like rmcp's router.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
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

use crate::render;
use crate::scenario::{RawToolResult, Scenario};

/// Calls received per tool name. Clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct CallCounts(Arc<Mutex<BTreeMap<String, u64>>>);

impl CallCounts {
    fn record(&self, tool: &str) {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *counts.entry(tool.to_string()).or_default() += 1;
    }

    /// Calls of one tool.
    pub fn get(&self, tool: &str) -> u64 {
        self.snapshot().get(tool).copied().unwrap_or(0)
    }

    /// Calls of all tools.
    pub fn total(&self) -> u64 {
        self.snapshot().values().sum()
    }

    /// Every tool's count.
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

type Handler = fn(&Scenario, &Map<String, Value>) -> render::Rendered;

struct Served {
    name: &'static str,
    description: &'static str,
    schema: fn() -> Value,
    handler: Handler,
}

/// The tools the lab serves, with the real servers' input schemas (properties and `required`).
fn served() -> Vec<Served> {
    vec![
        Served {
            name: "pods_get",
            description: "Get a Kubernetes Pod in the current or provided namespace with the provided name",
            schema: || {
                object(
                    json!({"name": str_prop("Name of the Pod"), "namespace": str_prop("Namespace to get the Pod from")}),
                    &["name"],
                )
            },
            handler: render::pods_get,
        },
        Served {
            name: "pods_list_in_namespace",
            description: "List all the Kubernetes pods in the specified namespace in the current cluster",
            schema: || {
                object(
                    json!({
                        "namespace": str_prop("Namespace to list pods from"),
                        "labelSelector": str_prop("Optional Kubernetes label selector (e.g. 'app=myapp,env=prod' or 'app in (myapp,yourapp)'), use this option when you want to filter the pods by label"),
                        "fieldSelector": str_prop("Optional Kubernetes field selector to filter pods by field values"),
                    }),
                    &["namespace"],
                )
            },
            handler: render::pods_list_in_namespace,
        },
        Served {
            name: "pods_list",
            description: "List all the Kubernetes pods in the current cluster from all namespaces",
            schema: || {
                object(
                    json!({
                        "labelSelector": str_prop("Optional Kubernetes label selector (e.g. 'app=myapp,env=prod' or 'app in (myapp,yourapp)'), use this option when you want to filter the pods by label"),
                        "fieldSelector": str_prop("Optional Kubernetes field selector to filter pods by field values"),
                    }),
                    &[],
                )
            },
            handler: render::pods_list,
        },
        Served {
            name: "pods_log",
            description: "Get the logs of a Kubernetes Pod in the current or provided namespace with the provided name",
            schema: || {
                object(
                    json!({
                        "name": str_prop("Name of the Pod to get the logs from"),
                        "namespace": str_prop("Namespace to get the Pod logs from"),
                        "container": str_prop("Name of the Pod container to get the logs from (Optional)"),
                        "previous": {"type": "boolean", "description": "Return previous terminated container logs (Optional)"},
                        "tail": {"type": "integer", "default": 100, "minimum": 0, "description": "Number of lines to retrieve from the end of the logs (Optional, default: 100)"},
                    }),
                    &["name"],
                )
            },
            handler: render::pods_log,
        },
        Served {
            name: "events_list",
            description: "List all the Kubernetes events in the current cluster from all namespaces",
            schema: || {
                object(
                    json!({"namespace": str_prop("Optional Namespace to retrieve the events from"), "fieldSelector": str_prop("Optional Kubernetes field selector to filter events")}),
                    &[],
                )
            },
            handler: render::events_list,
        },
        Served {
            name: "resources_list",
            description: "List Kubernetes resources and objects in the current cluster by providing their apiVersion and kind",
            schema: || {
                object(
                    json!({
                        "apiVersion": str_prop("apiVersion of the resources"), "kind": str_prop("kind of the resources"),
                        "namespace": str_prop("Optional Namespace"), "labelSelector": str_prop("Optional label selector"),
                        "fieldSelector": str_prop("Optional field selector"),
                    }),
                    &["apiVersion", "kind"],
                )
            },
            handler: render::resources_list,
        },
        Served {
            name: "resources_get",
            description: "Get a Kubernetes resource in the current cluster by providing its apiVersion, kind, optionally the namespace, and its name",
            schema: || {
                object(
                    json!({
                        "apiVersion": str_prop("apiVersion of the resource"), "kind": str_prop("kind of the resource"),
                        "namespace": str_prop("Optional Namespace"), "name": str_prop("Name of the resource"),
                    }),
                    &["apiVersion", "kind", "name"],
                )
            },
            handler: render::resources_get,
        },
        Served {
            name: "namespaces_list",
            description: "List all the Kubernetes namespaces in the current cluster",
            schema: || object(json!({}), &[]),
            handler: render::namespaces_list,
        },
        Served {
            name: "execute_query",
            description: "Execute a PromQL instant query against Prometheus",
            schema: || {
                object(
                    json!({
                        "query": str_prop("PromQL query string"),
                        "time": str_prop("Optional RFC3339 or Unix timestamp (default: current time)"),
                    }),
                    &["query"],
                )
            },
            handler: render::execute_query,
        },
        Served {
            name: "execute_range_query",
            description: "Execute a PromQL range query with start time, end time, and step interval",
            schema: || {
                object(
                    json!({
                        "query": str_prop("PromQL query string"), "start": str_prop("Start time as RFC3339 or Unix timestamp"),
                        "end": str_prop("End time as RFC3339 or Unix timestamp"), "step": str_prop("Query resolution step width (e.g., '15s', '1m', '1h')"),
                    }),
                    &["query", "start", "end", "step"],
                )
            },
            handler: render::execute_range_query,
        },
        Served {
            name: "query_loki_logs",
            description: "Executes a LogQL query against a Loki datasource to retrieve log entries",
            schema: || {
                object(
                    json!({
                        "datasourceUid": str_prop("The UID of the datasource to query"), "logql": str_prop("The LogQL query to execute against Loki"),
                        "startRfc3339": str_prop("Optionally, the start time of the query in RFC3339 format"),
                        "endRfc3339": str_prop("Optionally, the end time of the query in RFC3339 format"),
                        "limit": {"type": "integer", "default": 10, "description": "Optionally, the maximum number of log lines to return"},
                        "direction": str_prop("Optionally, 'forward' (oldest first) or 'backward' (newest first, default)"),
                    }),
                    &["datasourceUid", "logql"],
                )
            },
            handler: render::query_loki_logs,
        },
        Served {
            name: "search_tempo_traces",
            description: "Search for traces in a Tempo datasource using a TraceQL query",
            schema: || {
                object(
                    json!({
                        "datasourceUid": str_prop("UID of the tempo datasource to query"), "query": str_prop("TraceQL query string"),
                        "start": str_prop("Start time for the search (RFC3339 format)"), "end": str_prop("End time for the search (RFC3339 format)"),
                        "limit": {"type": "integer", "description": "Optionally, the maximum number of traces to return"},
                    }),
                    &["datasourceUid", "query"],
                )
            },
            handler: render::search_tempo_traces,
        },
    ]
}

fn str_prop(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn object(properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// The names of the tools the lab serves from a scenario's world.
pub fn served_tool_names() -> Vec<&'static str> {
    served().iter().map(|s| s.name).collect()
}

/// An MCP server for one scenario.
#[derive(Clone)]
pub struct LabServer {
    scenario: Arc<Scenario>,
    counts: CallCounts,
}

impl LabServer {
    pub fn new(scenario: Scenario) -> Self {
        Self {
            scenario: Arc::new(scenario),
            counts: CallCounts::default(),
        }
    }

    /// The shared call counter.
    pub fn counts(&self) -> CallCounts {
        self.counts.clone()
    }

    fn tools(&self) -> Vec<Tool> {
        let mut tools: Vec<Tool> = served()
            .into_iter()
            .map(|s| {
                let schema = match (s.schema)() {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                Tool::new(s.name, s.description, Arc::new(schema))
            })
            .collect();
        for raw in &self.scenario.spec.raw_tool_results {
            if raw.tool != "*" && !tools.iter().any(|t| t.name == raw.tool) {
                let schema = json!({"type": "object", "additionalProperties": true});
                if let Value::Object(schema) = schema {
                    tools.push(Tool::new(
                        raw.tool.clone(),
                        "A recorded tool result served by the lab",
                        Arc::new(schema),
                    ));
                }
            }
        }
        tools
    }

    /// The answer for one call: an override, or the world rendered; `Err` is a tool error.
    pub async fn answer(
        &self,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Option<Result<String, String>> {
        if let Some(raw) = find_override(&self.scenario.spec.raw_tool_results, tool, args) {
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
        served()
            .into_iter()
            .find(|s| s.name == tool)
            .map(|s| (s.handler)(&self.scenario, args))
            .or_else(|| {
                // A tool that exists only through overrides, called with other arguments.
                self.scenario
                    .spec
                    .raw_tool_results
                    .iter()
                    .any(|r| r.tool == tool)
                    .then(|| {
                        Err(format!(
                            "the lab has no recorded result of `{tool}` for these arguments"
                        ))
                    })
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
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "Firstline lab: serves one incident scenario with the real servers' tool names",
        )
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
        self.counts.record(&tool);
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
    counts: CallCounts,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl LabHandle {
    /// The streamable HTTP MCP endpoint, `http://addr/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The call-count endpoint, `http://addr/calls` (JSON `{tool: count}`).
    pub fn calls_url(&self) -> String {
        format!("http://{}/calls", self.addr)
    }

    /// Calls received so far, per tool.
    pub fn counts(&self) -> CallCounts {
        self.counts.clone()
    }

    /// Stops the server and waits for it.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let _ = self.task.await;
    }
}

/// Serves `scenario` over streamable HTTP at `addr` (port 0 picks a free one): MCP at `/mcp`,
/// call counts at `GET /calls`.
pub async fn serve_http(scenario: Scenario, addr: SocketAddr) -> std::io::Result<LabHandle> {
    let server = LabServer::new(scenario);
    let counts = server.counts();
    let shutdown = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(None)
        .with_cancellation_token(shutdown.child_token());
    if !addr.ip().is_loopback() {
        let mut hosts = config.allowed_hosts.clone();
        hosts.push(addr.ip().to_string());
        config = config.with_allowed_hosts(hosts);
    }
    let service: StreamableHttpService<LabServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    let calls = counts.clone();
    let router = axum::Router::new().nest_service("/mcp", service).route(
        "/calls",
        axum::routing::get(move || {
            let calls = calls.clone();
            async move { axum::Json(calls.snapshot()) }
        }),
    );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
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
        counts,
        shutdown,
        task,
    })
}

/// Serves `scenario` over stdio until the client disconnects.
pub async fn serve_stdio(scenario: Scenario) -> Result<(), LabServeError> {
    let running = LabServer::new(scenario)
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
