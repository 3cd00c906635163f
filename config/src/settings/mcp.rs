//! The `[mcp]` section: the MCP servers an investigation reads through, and which tool answers
//! each capability the fixed investigation steps ask for.

use super::check;
use super::mcp_server::{McpServerSettings, SERVERS};
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Capabilities the fixed investigation steps ask for (keys of `mcp.capabilities`).
pub const MCP_CAPABILITIES: &[&str] = &[
    "pod_describe",
    "object_get",
    "object_list",
    "pod_list",
    "pod_logs_current",
    "pod_logs_previous",
    "events",
    "deploy_history",
    "metric_range",
    "log_query",
    "trace_search",
];

const CAPABILITIES: &str = "mcp.capabilities";

/// MCP servers (ARCHITECTURE.md, invariant 7). Read-only by construction: only tools on a server's
/// `allow` list are ever called.
///
/// ```toml
/// [[mcp.servers]]
/// name = "k8s"
/// command = "kubernetes-mcp-server"
/// args = ["--read-only", "--list-output", "yaml"]
/// profile = "kubernetes-mcp-server"
///
/// [[mcp.servers]]
/// name = "prom"
/// url = "http://prometheus-mcp.monitoring:8080/mcp"
/// profile = "prometheus-mcp-server"
/// call_timeout_secs = 30
///
/// [mcp.capabilities.log_query]      # override or add one capability's tool
/// server = "grafana"
/// tool = "query_loki_logs"
/// args = { datasourceUid = "loki", logql = "{query}", startRfc3339 = "{start}", endRfc3339 = "{end}", limit = "{limit}" }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    /// The servers, each with its transport, allowlist and limits.
    pub servers: Vec<McpServerSettings>,
    /// Per-capability tool bindings; they override what a server's profile binds.
    pub capabilities: BTreeMap<String, CapabilityBinding>,
    /// Seconds one tool call may take (a server can override it).
    pub call_timeout_secs: u64,
    /// Seconds connecting to (or starting) a server and listing its tools may take.
    pub connect_timeout_secs: u64,
    /// Bytes of one tool result kept; longer results are truncated and marked.
    pub max_result_bytes: usize,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            capabilities: BTreeMap::new(),
            call_timeout_secs: 15,
            connect_timeout_secs: 10,
            max_result_bytes: 64 * 1024,
        }
    }
}

/// Which tool answers a capability, and how the request's fields become the tool's arguments.
///
/// Each argument is a JSON value; a string that is exactly `{field}` becomes the request field's
/// typed value (omitted when the request has none), and `{field}` inside a longer string is
/// replaced by its text. Fields: `namespace`, `pod`, `container`, `previous`, `tail_lines`,
/// `object`, `workload`, `query`, `start`, `end` (RFC 3339), `start_unix`, `end_unix`,
/// `step_secs`, `step` (`60s`), `limit`, `service`, and `var.NAME` from the server's `vars`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct CapabilityBinding {
    /// Server name (`mcp.servers[].name`).
    pub server: String,
    /// Tool name on that server.
    pub tool: String,
    /// Tool argument name → template.
    pub args: BTreeMap<String, serde_json::Value>,
}

impl McpSettings {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        check::at_least_one(&[
            ("mcp.call_timeout_secs", self.call_timeout_secs),
            ("mcp.connect_timeout_secs", self.connect_timeout_secs),
        ])?;
        if self.max_result_bytes < 1024 {
            return Err(ConfigError::rejected(
                "mcp.max_result_bytes",
                "must be at least 1024",
            ));
        }
        let mut names = BTreeSet::new();
        for (i, server) in self.servers.iter().enumerate() {
            let position = i + 1;
            // A nameless server is reported as such by its own check, not as a duplicate.
            if !server.name.trim().is_empty() && !names.insert(server.name.as_str()) {
                return Err(ConfigError::rejected(
                    SERVERS,
                    format!("{}: name used twice", server.label(position)),
                ));
            }
            server.validate(position)?;
        }
        for (capability, binding) in &self.capabilities {
            binding.validate(capability, &names)?;
        }
        Ok(())
    }
}

impl CapabilityBinding {
    /// `servers` holds the names in `mcp.servers`, which a binding must point at.
    fn validate(&self, capability: &str, servers: &BTreeSet<&str>) -> Result<(), ConfigError> {
        if !MCP_CAPABILITIES.contains(&capability) {
            return Err(ConfigError::rejected(
                CAPABILITIES,
                format!(
                    "unknown capability `{capability}` (known: {})",
                    MCP_CAPABILITIES.join(", ")
                ),
            ));
        }
        if !servers.contains(self.server.as_str()) {
            return Err(ConfigError::rejected(
                CAPABILITIES,
                format!(
                    "`{capability}` names server `{}`, which is not in mcp.servers",
                    self.server
                ),
            ));
        }
        if self.tool.trim().is_empty() {
            return Err(ConfigError::rejected(
                CAPABILITIES,
                format!("`{capability}` has no tool"),
            ));
        }
        Ok(())
    }
}
