//! The write tools of kubernetes-mcp-server 0.0.67 (run without `--read-only`) over a
//! scenario's world, changing it as Kubernetes would: `resources_create_or_update` (server-side
//! apply of a complete object), `resources_scale` and `pods_delete`. Only the lab's write
//! endpoint serves them (see `crate::server`).
//!
//! A write works on a copy of the world and returns the new world only when it changed
//! something, so a refused write leaves no trace:
//!
//! - RBAC refusals come first (`writes.forbidden`, or the handle's switch), with the API
//!   server's text for the tool's verb and resource (`refusal`);
//! - an applied object whose `metadata.resourceVersion` is not the current one is refused as the
//!   API server refuses a stale update (`apply`);
//! - then the controllers' work is done at once (`rollout`, `restart`, `scale`, `pods`;
//!   `template` compares pod templates): a new or
//!   re-labelled ReplicaSet and fresh pods, a refreshed StatefulSet pod, a replacement for a
//!   deleted pod, a cordon's taint, with the events the controllers record;
//! - every object whose content changed gets a new resourceVersion (`versions`); a write that
//!   changed nothing is no write (not counted, as a no-op apply changes nothing in Kubernetes);
//! - the first write `after_action.when` selects switches the metrics to `after_action`'s, and
//!   the pods a selected write creates log `after_action.logs` (`after`).
//!
//! `manifest` reads the applied object; the answers are the real server's texts.

mod after;
mod apply;
mod manifest;
mod pods;
mod refusal;
mod restart;
mod rollout;
mod scale;
mod template;
#[cfg(test)]
mod tests;
mod versions;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::reltime::RelTime;
use crate::scenario::{Change, EventSpec, ObjectRef, Scenario};

/// The annotation Firstline's executor sets on what it applies: the action's id (its
/// idempotency key).
pub const ACTION_ANNOTATION: &str = "firstline.dev/action";

/// A write tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteTool {
    CreateOrUpdate,
    Scale,
    PodsDelete,
}

impl WriteTool {
    /// Every write tool.
    pub const ALL: [WriteTool; 3] = [
        WriteTool::CreateOrUpdate,
        WriteTool::Scale,
        WriteTool::PodsDelete,
    ];

    /// The tool's name.
    pub fn name(self) -> &'static str {
        match self {
            WriteTool::CreateOrUpdate => "resources_create_or_update",
            WriteTool::Scale => "resources_scale",
            WriteTool::PodsDelete => "pods_delete",
        }
    }

    /// The write tool of that name.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// A write that changed the world (`GET /writes` lists them as JSON, camelCase).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppliedWrite {
    /// The tool called.
    pub tool: String,
    pub api_version: String,
    pub kind: String,
    /// None for a cluster-scoped object (a Node).
    pub namespace: Option<String>,
    pub name: String,
    pub change: Change,
    /// `metadata.annotations["firstline.dev/action"]` of the applied object
    /// (`resources_create_or_update` only).
    pub action: Option<String>,
    /// The object's resourceVersion after the write (none once deleted).
    pub resource_version: Option<String>,
    pub at: DateTime<Utc>,
}

/// A write tool's answer: its text and, when the world changed, the new world and the write.
#[derive(Debug)]
pub struct Written {
    pub text: String,
    pub changed: Option<(Scenario, AppliedWrite)>,
}

/// Who may not write: the user RBAC refuses, or none.
pub type Refusal<'a> = Option<&'a str>;

/// Calls `tool` on `world` at `now`; `Err` is the tool error. `forbidden` names the user a
/// refusal names when writes are refused.
pub fn call(
    world: &Scenario,
    tool: WriteTool,
    args: &Map<String, Value>,
    now: DateTime<Utc>,
    forbidden: Refusal,
) -> Result<Written, String> {
    match tool {
        WriteTool::CreateOrUpdate => apply::create_or_update(world, args, now, forbidden),
        WriteTool::Scale => scale::resources_scale(world, args, now, forbidden),
        WriteTool::PodsDelete => pods::pods_delete(world, args, now, forbidden),
    }
}

/// The object a write is about.
#[derive(Debug, Clone)]
struct Target {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
}

/// What a write did to the copy of the world.
struct Effect {
    change: Change,
    /// Pods it created (names, in the target's namespace).
    created: Vec<String>,
}

/// Gives the changed objects new resourceVersions and applies `after_action`; the new world and
/// the write, or `None` when nothing changed.
fn finish(
    before: &Scenario,
    mut after: Scenario,
    tool: WriteTool,
    target: Target,
    effect: Effect,
    action: Option<String>,
    now: DateTime<Utc>,
) -> Option<(Scenario, AppliedWrite)> {
    if !versions::bump(before, &mut after) {
        return None;
    }
    after::apply(&mut after, &target, effect.change, &effect.created, now);
    let resource_version = (tool != WriteTool::PodsDelete).then(|| {
        let key = (
            target.kind.clone(),
            target.namespace.clone().unwrap_or_default(),
            target.name.clone(),
        );
        after.spec.live.version(&key).to_string()
    });
    let write = AppliedWrite {
        tool: tool.name().to_string(),
        api_version: target.api_version,
        kind: target.kind,
        namespace: target.namespace,
        name: target.name,
        change: effect.change,
        action,
        resource_version,
        at: now,
    };
    Some((after, write))
}

/// Records a Normal event about `kind` `namespace/name` (none for a Node) at `now`.
fn event(
    world: &mut Scenario,
    reason: &str,
    message: String,
    (kind, name, namespace): (&str, &str, Option<&str>),
    now: DateTime<Utc>,
) {
    world.spec.events.push(EventSpec {
        kind: "Normal".into(),
        reason: reason.into(),
        message,
        involved_object: ObjectRef {
            kind: kind.into(),
            name: name.into(),
            namespace: namespace.map(String::from),
        },
        namespace: None,
        at: RelTime::Absolute(now),
        count: None,
    });
}
