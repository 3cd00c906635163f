//! The write-capable MCP server (`actions.server`): reading the object an action changes, as the
//! server returns it, and sending the one write. Its allowlist is the catalogue's tools whatever
//! the settings say, so no other tool (exec, run, delete of anything but a pod) can be called.

use firstline_config::{ActionsSettings, McpSettings};
use firstline_investigation::kube;
use firstline_investigation::tools::{CallScope, McpTools, RoundTools, ToolConfigError, Written};
use firstline_model::{Action, ObjectRef};
use serde_json::{Value, json};
use sqlx::PgPool;

use super::change::{Change, Read, json_map};

/// The tools the catalogue needs: reading the object (and a Deployment's ReplicaSets) and the
/// three writes.
pub const WRITE_TOOLS: [&str; 5] = [
    "resources_get",
    "resources_list",
    "resources_create_or_update",
    "resources_scale",
    "pods_delete",
];

/// The write server, connected lazily.
#[derive(Clone, Debug)]
pub struct Writer {
    tools: McpTools,
    server: String,
}

impl Writer {
    /// The server `actions.server` names (with the limits of `[mcp]`); `None` when unset.
    pub fn from_settings(
        actions: &ActionsSettings,
        mcp: &McpSettings,
        pool: Option<PgPool>,
    ) -> Result<Option<Self>, ToolConfigError> {
        let Some(server) = &actions.server else {
            return Ok(None);
        };
        let mut server = server.clone();
        server.allow = WRITE_TOOLS.iter().map(|t| t.to_string()).collect();
        // It answers no capability: the investigation never calls it.
        server.profile = None;
        let settings = McpSettings {
            servers: vec![server.clone()],
            capabilities: Default::default(),
            ..mcp.clone()
        };
        Ok(Some(Self {
            tools: McpTools::from_settings(&settings, pool)?.with_actor("firstline-actions"),
            server: server.name,
        }))
    }

    /// The calls made for action `action_id`: audited under its thread and round; `purpose`
    /// keeps a write's stored answer apart from reads, which are never reused.
    pub fn scope(&self, purpose: &str, thread_id: i64, round: u32, action_id: i64) -> RoundTools {
        let mut scope = CallScope::round(
            &format!("action-{action_id}-{purpose}"),
            Some(thread_id),
            round,
        );
        scope.key = format!("action-{action_id}-{purpose}");
        self.tools.round(scope)
    }

    /// The object `target` as the server returns it now; `Ok(None)` when it does not exist.
    pub async fn get(
        &self,
        calls: &RoundTools,
        target: &ObjectRef,
    ) -> Result<Option<Value>, String> {
        let mut args = json_map(json!({
            "apiVersion": target.api_version, "kind": target.kind, "name": target.name,
        }));
        if let Some(namespace) = &target.namespace {
            args.insert("namespace".into(), json!(namespace));
        }
        match calls.read_raw(&self.server, "resources_get", args).await {
            Ok(text) => kube::objects(&text)
                .into_iter()
                .next()
                .map(Some)
                .ok_or_else(|| format!("the answer for {target} is no object")),
            // The API server's words for this object missing (`deployments.apps "x" not found`).
            Err(reason) if reason.contains(&format!("\"{}\" not found", target.name)) => Ok(None),
            Err(reason) => Err(reason),
        }
    }

    /// What `action`'s change is computed from.
    pub async fn read(&self, calls: &RoundTools, action: &Action) -> Result<Read, String> {
        let target = action.object();
        let object = self
            .get(calls, &target)
            .await?
            .ok_or_else(|| format!("{target} does not exist"))?;
        let replica_sets = match action {
            Action::Rollback { namespace, .. } => {
                let mut args = json_map(json!({
                    "apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": namespace,
                }));
                if let Some(selector) = kube::selector_of(&object.to_string()) {
                    args.insert("labelSelector".into(), json!(selector));
                }
                let text = calls.read_raw(&self.server, "resources_list", args).await?;
                kube::objects(&text)
            }
            _ => Vec::new(),
        };
        Ok(Read {
            object,
            replica_sets,
        })
    }

    /// Sends `change`'s write (its answer is kept under `calls`' scope: a retry gets it back).
    pub async fn send(&self, calls: &RoundTools, change: &Change) -> Written {
        calls
            .write(&self.server, &change.tool, change.arguments.clone())
            .await
    }
}
