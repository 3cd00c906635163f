//! The `[actions]` section: whether a round may propose a catalogue action, who may approve one,
//! how long a proposal waits, how long the outcome is verified, and the write-capable MCP server
//! that executes approved actions — kept apart from the read-only `mcp.servers`, so nothing the
//! investigation (or a model) calls can ever reach it.

use std::collections::BTreeMap;

use super::check;
use super::mcp::McpSettings;
use super::mcp_server::McpServerSettings;
use crate::ConfigError;
use serde::{Deserialize, Serialize};

/// Acting on the cluster with a person's approval. Off by default: nothing is proposed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ActionsSettings {
    /// Whether a round whose verified cause supports one proposes an action (Approve / Reject).
    pub enabled: bool,
    /// Who may approve, per namespace: Slack user ids (`U…`, `W…`) or user group ids (`S…`);
    /// the key `*` applies to every namespace and is the only one that covers a node. Anyone may
    /// reject.
    pub approvers: BTreeMap<String, Vec<String>>,
    /// Seconds a proposal waits for a decision before it expires.
    pub approval_timeout_secs: u64,
    /// Seconds the evidence is re-read after an action before it is reported not recovered.
    pub verify_secs: u64,
    /// Seconds between two readings while verifying.
    pub verify_interval_secs: u64,
    /// The write-capable MCP server (kubernetes-mcp-server without `--read-only`, with its own
    /// narrow RBAC); same fields as one `[[mcp.servers]]` entry.
    pub server: Option<McpServerSettings>,
}

impl Default for ActionsSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            approvers: BTreeMap::new(),
            approval_timeout_secs: 3600,
            verify_secs: 300,
            verify_interval_secs: 15,
            server: None,
        }
    }
}

/// The key of the approvers who may decide in any namespace.
pub const ANY_NAMESPACE: &str = "*";

impl ActionsSettings {
    /// The ids listed for `namespace` (`None`: a node), the `*` entry included.
    pub fn approvers_for(&self, namespace: Option<&str>) -> Vec<&str> {
        let listed = |key: &str| {
            self.approvers
                .get(key)
                .into_iter()
                .flatten()
                .map(String::as_str)
        };
        let mut ids: Vec<&str> = listed(ANY_NAMESPACE).collect();
        if let Some(namespace) = namespace {
            ids.extend(listed(namespace));
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    pub(crate) fn validate(&self, mcp: &McpSettings) -> Result<(), ConfigError> {
        check::at_least_one(&[
            ("actions.approval_timeout_secs", self.approval_timeout_secs),
            ("actions.verify_secs", self.verify_secs),
            ("actions.verify_interval_secs", self.verify_interval_secs),
        ])?;
        if self.verify_interval_secs > self.verify_secs {
            return Err(ConfigError::rejected(
                "actions.verify_interval_secs",
                "must not be longer than actions.verify_secs",
            ));
        }
        for (namespace, ids) in &self.approvers {
            if let Some(id) = ids.iter().find(|id| !is_slack_principal(id)) {
                return Err(ConfigError::rejected(
                    "actions.approvers",
                    format!(
                        "`{id}` (for `{namespace}`) is not a Slack user id (U…, W…) or user group id (S…)"
                    ),
                ));
            }
        }
        if let Some(server) = &self.server {
            server.validate_as("actions.server")?;
            let same = |a: &Option<String>, b: &Option<String>| match (a, b) {
                (Some(a), Some(b)) => normalized(a) == normalized(b),
                _ => false,
            };
            let read = mcp.servers.iter().find(|read| {
                read.name == server.name
                    || same(&read.url, &server.url)
                    || same(&read.command, &server.command)
            });
            if let Some(read) = read {
                return Err(ConfigError::rejected(
                    "actions.server",
                    format!(
                        "is also read server `{}` in mcp.servers: the write server must be a separate one, which the investigation never calls",
                        read.name
                    ),
                ));
            }
        }
        if !self.enabled {
            return Ok(());
        }
        if self.server.is_none() {
            return Err(ConfigError::rejected(
                "actions.server",
                "must be set when actions.enabled is true (the write-capable MCP server)",
            ));
        }
        if self.approvers.values().all(Vec::is_empty) {
            return Err(ConfigError::rejected(
                "actions.approvers",
                "must list at least one approver when actions.enabled is true",
            ));
        }
        Ok(())
    }
}

/// A URL or command compared loosely: case, surrounding space and trailing slashes aside.
fn normalized(text: &str) -> String {
    text.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// A Slack user (`U…`, `W…`) or user group (`S…`) id: capitals and digits.
fn is_slack_principal(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some('U' | 'W' | 'S'))
        && id.len() >= 3
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str, url: &str) -> McpServerSettings {
        McpServerSettings {
            name: name.into(),
            url: Some(url.into()),
            profile: Some("kubernetes-mcp-server".into()),
            ..McpServerSettings::default()
        }
    }

    #[test]
    fn off_by_default_and_on_only_with_a_server_and_an_approver() {
        let mcp = McpSettings::default();
        let off = ActionsSettings::default();
        assert!(!off.enabled);
        off.validate(&mcp).expect("the default is valid");

        let mut on = ActionsSettings {
            enabled: true,
            ..ActionsSettings::default()
        };
        let err = on.validate(&mcp).unwrap_err().to_string();
        assert!(err.contains("actions.server"), "{err}");
        on.server = Some(server("kubernetes-write", "http://write:8080/mcp"));
        let err = on.validate(&mcp).unwrap_err().to_string();
        assert!(err.contains("at least one approver"), "{err}");
        on.approvers.insert("shop".into(), vec!["U024BE7LH".into()]);
        on.validate(&mcp).expect("valid");
    }

    #[test]
    fn approvers_are_slack_ids_and_star_covers_every_namespace() {
        let mut settings = ActionsSettings::default();
        settings
            .approvers
            .insert("shop".into(), vec!["U1AAA".into(), "S0614TZR7".into()]);
        settings.approvers.insert("*".into(), vec!["W0SRE".into()]);
        assert_eq!(
            settings.approvers_for(Some("shop")),
            ["S0614TZR7", "U1AAA", "W0SRE"]
        );
        assert_eq!(settings.approvers_for(Some("billing")), ["W0SRE"]);
        assert_eq!(settings.approvers_for(None), ["W0SRE"]);
        settings
            .approvers
            .insert("billing".into(), vec!["@alice".into()]);
        let err = settings
            .validate(&McpSettings::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("`@alice`"), "{err}");
    }

    #[test]
    fn the_write_server_is_never_one_of_the_read_servers() {
        let mut mcp = McpSettings::default();
        mcp.servers.push(server("k8s", "http://kmcp:8080/mcp"));
        let settings = ActionsSettings {
            server: Some(server("kubernetes-write", "http://KMCP:8080/mcp/")),
            ..ActionsSettings::default()
        };
        let err = settings.validate(&mcp).unwrap_err().to_string();
        assert!(err.contains("read server `k8s`"), "{err}");
    }
}
