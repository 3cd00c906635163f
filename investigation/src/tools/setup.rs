//! From settings to a ready-to-use plan: which servers exist, what each may call, and which
//! tool answers each capability. Everything that can be wrong with the MCP configuration is
//! found here, at start-up, with the setting named.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use firstline_config::{McpServerSettings, McpSettings};
use serde_json::Value;

use super::{profiles, template};
use crate::evidence::Capability;

/// Why the MCP configuration cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolConfigError {
    #[error("mcp.servers: server #{index} has no name")]
    Unnamed { index: usize },
    #[error("mcp.servers: server `{0}` is configured twice")]
    Duplicate(String),
    #[error("mcp.servers `{0}`: set exactly one of `url` (streamable HTTP) and `command` (stdio)")]
    Transport(String),
    #[error("mcp.servers `{server}`: unknown profile `{profile}` (known: {known})", known = profiles::NAMES.join(", "))]
    UnknownProfile { server: String, profile: String },
    #[error("mcp.capabilities: unknown capability `{0}`")]
    UnknownCapability(String),
    #[error("mcp.capabilities.{capability}: server `{server}` is not in mcp.servers")]
    UnknownServer { capability: String, server: String },
    #[error("tool arguments for `{capability}` on server `{server}`: {error}")]
    Template {
        capability: String,
        server: String,
        error: template::TemplateError,
    },
}

/// How to reach a server.
#[derive(Clone, PartialEq)]
pub(crate) enum Transport {
    Http(super::http::HttpEndpoint),
    Stdio {
        command: String,
        args: Vec<String>,
        /// May hold credentials: never logged.
        env: BTreeMap<String, String>,
    },
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Transport::Http(endpoint) => write!(f, "{endpoint:?}"),
            Transport::Stdio { command, args, .. } => write!(f, "stdio {command} {args:?}"),
        }
    }
}

/// One server, resolved.
#[derive(Debug, Clone)]
pub(crate) struct ServerSpec {
    pub name: String,
    pub transport: Transport,
    pub allow: BTreeSet<String>,
    pub vars: BTreeMap<String, String>,
    pub call_timeout: Duration,
    pub connect_timeout: Duration,
    pub max_result_bytes: usize,
}

/// One capability bound to a server's tool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Binding {
    pub server: String,
    pub tool: String,
    pub args: BTreeMap<String, Value>,
}

/// The resolved configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub servers: BTreeMap<String, ServerSpec>,
    pub bindings: BTreeMap<&'static str, Binding>,
}

/// The configuration key of a capability; `None` for ad-hoc (model-chosen) tools.
pub(crate) fn capability_key(capability: &Capability) -> Option<&'static str> {
    Some(match capability {
        Capability::PodDescribe => "pod_describe",
        Capability::ObjectGet => "object_get",
        Capability::ObjectList => "object_list",
        Capability::PodList => "pod_list",
        Capability::PodLogsCurrent => "pod_logs_current",
        Capability::PodLogsPrevious => "pod_logs_previous",
        Capability::Events => "events",
        Capability::DeployHistory => "deploy_history",
        Capability::MetricRange => "metric_range",
        Capability::LogQuery => "log_query",
        Capability::TraceSearch => "trace_search",
        Capability::Other(_) => return None,
    })
}

fn known_capability(key: &str) -> Option<&'static str> {
    firstline_config::MCP_CAPABILITIES
        .iter()
        .copied()
        .find(|k| *k == key)
}

fn server_spec(
    index: usize,
    server: &McpServerSettings,
    settings: &McpSettings,
) -> Result<ServerSpec, ToolConfigError> {
    if server.name.trim().is_empty() {
        return Err(ToolConfigError::Unnamed { index: index + 1 });
    }
    let transport = match (&server.url, &server.command) {
        (Some(url), None) => Transport::Http(super::http::HttpEndpoint {
            url: url.clone(),
            ca_file: server.ca_file.clone(),
            bearer_token_file: server.bearer_token_file.clone(),
            headers: server.headers.clone(),
        }),
        (None, Some(command)) => Transport::Stdio {
            command: command.clone(),
            args: server.args.clone(),
            env: server.env.clone(),
        },
        _ => return Err(ToolConfigError::Transport(server.name.clone())),
    };
    let mut allow: BTreeSet<String> = server.allow.iter().cloned().collect();
    if let Some(profile) = &server.profile {
        if profiles::profile(profile).is_none() {
            return Err(ToolConfigError::UnknownProfile {
                server: server.name.clone(),
                profile: profile.to_string(),
            });
        }
        if allow.is_empty() {
            allow = profiles::tools(profile)
                .into_iter()
                .map(String::from)
                .collect();
        }
    }
    if allow.is_empty() {
        tracing::warn!(server = %server.name, "MCP server has an empty allowlist: none of its tools will be called");
    }
    Ok(ServerSpec {
        name: server.name.clone(),
        transport,
        allow,
        vars: server.vars.clone(),
        call_timeout: Duration::from_secs(
            server
                .call_timeout_secs
                .unwrap_or(settings.call_timeout_secs)
                .max(1),
        ),
        connect_timeout: Duration::from_secs(
            server
                .connect_timeout_secs
                .unwrap_or(settings.connect_timeout_secs)
                .max(1),
        ),
        max_result_bytes: server
            .max_result_bytes
            .unwrap_or(settings.max_result_bytes)
            .max(256),
    })
}

/// Resolves settings: servers in order, profile bindings (the first server whose profile binds
/// a capability wins), then explicit `mcp.capabilities` on top.
pub(crate) fn plan(settings: &McpSettings) -> Result<Plan, ToolConfigError> {
    let mut plan = Plan::default();
    for (index, server) in settings.servers.iter().enumerate() {
        let spec = server_spec(index, server, settings)?;
        if plan.servers.contains_key(&spec.name) {
            return Err(ToolConfigError::Duplicate(spec.name));
        }
        if let Some(profile) = server.profile.as_deref().and_then(profiles::profile) {
            for b in profile {
                plan.bindings
                    .entry(b.capability)
                    .or_insert_with(|| Binding {
                        server: spec.name.clone(),
                        tool: b.tool.to_string(),
                        args: serde_json::from_value(b.args).unwrap_or_default(),
                    });
            }
        }
        plan.servers.insert(spec.name.clone(), spec);
    }
    for (key, binding) in &settings.capabilities {
        let capability = known_capability(key)
            .ok_or_else(|| ToolConfigError::UnknownCapability(key.to_string()))?;
        if !plan.servers.contains_key(&binding.server) {
            return Err(ToolConfigError::UnknownServer {
                capability: key.to_string(),
                server: binding.server.clone(),
            });
        }
        plan.bindings.insert(
            capability,
            Binding {
                server: binding.server.clone(),
                tool: binding.tool.clone(),
                args: binding.args.clone(),
            },
        );
    }
    for (capability, binding) in &plan.bindings {
        let vars = plan
            .servers
            .get(&binding.server)
            .map(|s| s.vars.clone())
            .unwrap_or_default();
        template::check(&binding.args, &vars).map_err(|error| ToolConfigError::Template {
            capability: capability.to_string(),
            server: binding.server.clone(),
            error,
        })?;
        if let Some(server) = plan.servers.get(&binding.server)
            && !server.allow.contains(&binding.tool)
        {
            tracing::warn!(
                capability, server = %binding.server, tool = %binding.tool,
                "capability is bound to a tool that is not on the server's allowlist: it will be refused"
            );
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use firstline_config::CapabilityBinding;

    fn server(name: &str, profile: Option<&str>) -> McpServerSettings {
        McpServerSettings {
            name: name.into(),
            url: Some(format!("http://127.0.0.1:1/{name}")),
            profile: profile.map(String::from),
            ..Default::default()
        }
    }

    #[test]
    fn profiles_bind_capabilities_and_default_the_allowlist() {
        let settings = McpSettings {
            servers: vec![
                server("k8s", Some("kubernetes-mcp-server")),
                server("prom", Some("prometheus-mcp-server")),
            ],
            ..Default::default()
        };
        let plan = plan(&settings).unwrap();
        assert_eq!(plan.bindings["pod_logs_previous"].tool, "pods_log");
        assert_eq!(plan.bindings["pod_logs_previous"].server, "k8s");
        assert_eq!(plan.bindings["metric_range"].server, "prom");
        assert!(!plan.bindings.contains_key("log_query"));
        assert!(plan.servers["prom"].allow.contains("execute_range_query"));
        assert!(!plan.servers["prom"].allow.contains("execute_query"));
        assert_eq!(plan.servers["k8s"].call_timeout, Duration::from_secs(15));
        assert_eq!(plan.servers["k8s"].max_result_bytes, 65_536);
    }

    #[test]
    fn explicit_capabilities_override_profiles() {
        let mut settings = McpSettings {
            servers: vec![server("lab", Some("lab")), server("other", None)],
            ..Default::default()
        };
        settings.capabilities.insert(
            "metric_range".into(),
            CapabilityBinding {
                server: "other".into(),
                tool: "query".into(),
                args: [("q".to_string(), Value::from("{query}"))].into(),
            },
        );
        let plan = plan(&settings).unwrap();
        assert_eq!(plan.bindings["metric_range"].server, "other");
        assert_eq!(plan.bindings["pod_describe"].server, "lab");
    }

    #[test]
    fn grafana_needs_its_datasource_vars() {
        let settings = McpSettings {
            servers: vec![server("grafana", Some("mcp-grafana"))],
            ..Default::default()
        };
        let error = plan(&settings).unwrap_err().to_string();
        assert!(error.contains("loki_datasource_uid"), "{error}");
        let mut ok = settings.clone();
        ok.servers[0].vars = [
            ("loki_datasource_uid".to_string(), "l".to_string()),
            ("tempo_datasource_uid".to_string(), "t".to_string()),
        ]
        .into();
        assert!(plan(&ok).is_ok());
    }

    #[test]
    fn configuration_errors_name_the_server_or_capability() {
        let mut bad = McpSettings {
            servers: vec![server("a", Some("nope"))],
            ..Default::default()
        };
        assert!(
            plan(&bad)
                .unwrap_err()
                .to_string()
                .contains("unknown profile `nope`")
        );
        bad.servers = vec![server("a", None), server("a", None)];
        assert_eq!(
            plan(&bad).unwrap_err(),
            ToolConfigError::Duplicate("a".into())
        );
        bad.servers = vec![server("a", None)];
        bad.capabilities.insert(
            "events".into(),
            CapabilityBinding {
                server: "ghost".into(),
                tool: "t".into(),
                args: Default::default(),
            },
        );
        assert!(plan(&bad).unwrap_err().to_string().contains("ghost"));
    }
}
