//! One entry of `[[mcp.servers]]`: how to reach an MCP server, which of its tools may be called,
//! and the limits that override the section's.

use crate::ConfigError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Names of the built-in capability profiles (`mcp.servers[].profile`). The profiles themselves
/// (tool names and argument shapes) live with the tool layer in `firstline-investigation`, whose
/// tests check this list against them.
pub const MCP_PROFILES: &[&str] = &[
    "kubernetes-mcp-server",
    "prometheus-mcp-server",
    "mcp-grafana",
    "lab",
];

/// The setting every server's problems are reported under.
pub(super) const SERVERS: &str = "mcp.servers";

/// One MCP server: either `url` (streamable HTTP, plain or over TLS) or `command` (a stdio child
/// process).
#[derive(Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerSettings {
    /// Name used in capability bindings, evidence and the audit trail.
    pub name: String,
    /// Streamable HTTP endpoint, e.g. `http://127.0.0.1:8080/mcp` or `https://mcp.example/mcp`.
    pub url: Option<String>,
    /// For `https://`: a PEM bundle of the CAs to trust instead of the system's roots.
    pub ca_file: Option<PathBuf>,
    /// A file holding the bearer token sent as `Authorization: Bearer …` (a mounted Secret, a
    /// projected service-account token); read at each connection, so a rotated token is used.
    pub bearer_token_file: Option<PathBuf>,
    /// Headers sent with every request (a tenant id, an API key header; values are never logged).
    pub headers: BTreeMap<String, String>,
    /// Program to start for a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment for the child process (may hold credentials: never logged).
    pub env: BTreeMap<String, String>,
    /// A built-in profile binding capabilities to this server's tools (see [`MCP_PROFILES`]).
    pub profile: Option<String>,
    /// Tools that may be called. Empty means "the tools this server's profile uses"; any other
    /// tool is refused and audited.
    pub allow: Vec<String>,
    /// Values for `{var.NAME}` placeholders in tool arguments, e.g. a Grafana datasource uid.
    pub vars: BTreeMap<String, String>,
    /// Overrides `mcp.call_timeout_secs` for this server.
    pub call_timeout_secs: Option<u64>,
    /// Overrides `mcp.connect_timeout_secs` for this server.
    pub connect_timeout_secs: Option<u64>,
    /// Overrides `mcp.max_result_bytes` for this server.
    pub max_result_bytes: Option<usize>,
}

impl std::fmt::Debug for McpServerSettings {
    /// The child's environment may hold credentials: show its names only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerSettings")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("ca_file", &self.ca_file)
            .field("bearer_token_file", &self.bearer_token_file)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("profile", &self.profile)
            .field("allow", &self.allow)
            .field("vars", &self.vars)
            .field("call_timeout_secs", &self.call_timeout_secs)
            .field("connect_timeout_secs", &self.connect_timeout_secs)
            .field("max_result_bytes", &self.max_result_bytes)
            .finish()
    }
}

impl McpServerSettings {
    /// How messages point at this server: its 1-based `position` in the list and its name,
    /// since an operator may have left the name out or used it twice.
    pub(super) fn label(&self, position: usize) -> String {
        format!("server #{position} (`{}`)", self.name)
    }

    /// Checks this server alone; `position` is its 1-based place in `mcp.servers`.
    pub(super) fn validate(&self, position: usize) -> Result<(), ConfigError> {
        if self.name.trim().is_empty() {
            return Err(ConfigError::rejected(
                SERVERS,
                format!("server #{position} has no name"),
            ));
        }
        self.validate_in(SERVERS, &self.label(position))
    }

    /// Checks this server alone as the setting `setting` (a server outside `mcp.servers`, such
    /// as `actions.server`).
    pub(super) fn validate_as(&self, setting: &'static str) -> Result<(), ConfigError> {
        if self.name.trim().is_empty() {
            return Err(ConfigError::rejected(setting, "the server has no name"));
        }
        self.validate_in(setting, &format!("server `{}`", self.name))
    }

    fn validate_in(&self, setting: &'static str, label: &str) -> Result<(), ConfigError> {
        let reject = |problem: &str| {
            Err(ConfigError::rejected(
                setting,
                format!("{label}: {problem}"),
            ))
        };
        match (&self.url, &self.command) {
            (Some(_), Some(_)) | (None, None) => {
                return reject("set exactly one of `url` (streamable HTTP) and `command` (stdio)");
            }
            (Some(url), None) if !url.starts_with("http://") && !url.starts_with("https://") => {
                return reject("`url` must be an http:// or https:// URL");
            }
            (Some(url), None) if self.ca_file.is_some() && !url.starts_with("https://") => {
                return reject("`ca_file` needs an https:// `url`");
            }
            (None, Some(command)) if command.trim().is_empty() => {
                return reject("`command` is empty");
            }
            (None, Some(_))
                if self.ca_file.is_some()
                    || self.bearer_token_file.is_some()
                    || !self.headers.is_empty() =>
            {
                return reject(
                    "`ca_file`, `bearer_token_file` and `headers` are for an HTTP `url`; a stdio server takes `env`",
                );
            }
            _ => {}
        }
        if let Some(name) = self.headers.keys().find(|name| !is_header_name(name)) {
            return reject(&format!("`headers`: `{name}` is not an HTTP header name"));
        }
        if let Some(name) = self
            .headers
            .iter()
            .find(|(_, value)| {
                !value
                    .bytes()
                    .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
            })
            .map(|(name, _)| name)
        {
            return reject(&format!(
                "`headers`: the value of `{name}` is not printable ASCII on one line"
            ));
        }
        // Credentials only over TLS, as for Temporal.
        if let Some(url) = &self.url
            && url.starts_with("http://")
            && (self.bearer_token_file.is_some()
                || self
                    .headers
                    .keys()
                    .any(|name| name.eq_ignore_ascii_case("authorization")))
        {
            return reject("a bearer token or an Authorization header needs an https:// `url`");
        }
        if self
            .headers
            .keys()
            .any(|name| name.eq_ignore_ascii_case("authorization"))
            && self.bearer_token_file.is_some()
        {
            return reject(
                "set the Authorization header either in `headers` or by `bearer_token_file`",
            );
        }
        if let Some(profile) = &self.profile
            && !MCP_PROFILES.contains(&profile.as_str())
        {
            return reject(&format!(
                "unknown profile `{profile}` (known: {})",
                MCP_PROFILES.join(", ")
            ));
        }
        if self.call_timeout_secs == Some(0) || self.connect_timeout_secs == Some(0) {
            return reject("timeouts must be at least 1 second");
        }
        if self.max_result_bytes.is_some_and(|bytes| bytes < 1024) {
            return reject("`max_result_bytes` must be at least 1024");
        }
        Ok(())
    }
}

/// An HTTP header name: one or more token characters (RFC 9110).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}
