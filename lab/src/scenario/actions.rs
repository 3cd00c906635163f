//! What writes do to a scenario's world, as written in `scenario.yaml`: `after_action` (the
//! metric series and the new pods' logs once an action was executed — a recovery, or none) and
//! `writes` (whether the write tools are refused, as RBAC refuses a service account). The write
//! tools themselves live in `crate::write`.

use serde::{Deserialize, Serialize};

use super::telemetry::MetricSpec;

/// What a write changed, as the lab classifies it (`GET /writes`' `change`, `after_action.when`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// A Deployment's template set back to an older ReplicaSet's (`rollout undo`).
    Rollback,
    /// A workload's template changed by `kubectl.kubernetes.io/restartedAt` (`rollout restart`).
    Restart,
    /// `spec.replicas` changed.
    Scale,
    /// A CronJob's `spec.suspend` set.
    Suspend,
    /// A CronJob's `spec.suspend` cleared.
    Resume,
    /// A Node's `spec.unschedulable` set.
    Cordon,
    /// A Node's `spec.unschedulable` cleared.
    Uncordon,
    /// A pod deleted (`pods_delete`).
    Delete,
    /// Anything else applied: annotations, another template change.
    Update,
}

impl Change {
    /// The name as written (`rollback`).
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Rollback => "rollback",
            Change::Restart => "restart",
            Change::Scale => "scale",
            Change::Suspend => "suspend",
            Change::Resume => "resume",
            Change::Cordon => "cordon",
            Change::Uncordon => "uncordon",
            Change::Delete => "delete",
            Change::Update => "update",
        }
    }
}

/// What happens once an action was executed: the first write that changed the world and that
/// `when` selects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AfterActionSpec {
    /// Which write counts as the action; default: any write that changed the world.
    #[serde(default)]
    pub when: Option<ActionMatch>,
    /// Series like `metrics[]`, their times relative to the action (`0` is the moment it was
    /// executed). An entry with the same `query`, `metric` and `labels` as a `metrics[]` entry
    /// replaces it from the action on (what it said before stays); any other entry is a series
    /// that starts then.
    #[serde(default)]
    pub metrics: Vec<MetricSpec>,
    /// The current logs of the pods a selected write creates.
    #[serde(default)]
    pub logs: Vec<AfterLogSpec>,
}

/// Selects writes; every key given must match (`kind: Deployment, name: checkout, change:
/// rollback`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionMatch {
    /// The written object's kind (`Deployment`; `Pod` for `pods_delete`).
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub change: Option<Change>,
}

impl ActionMatch {
    /// Whether a write of `change` to `kind` `namespace/name` is selected.
    pub fn selects(&self, kind: &str, namespace: Option<&str>, name: &str, change: Change) -> bool {
        self.kind.as_deref().is_none_or(|k| k == kind)
            && self.name.as_deref().is_none_or(|n| n == name)
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| Some(ns) == namespace)
            && self.change.is_none_or(|c| c == change)
    }
}

/// The current log of the new pods of one workload (their names are only known once they
/// exist).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AfterLogSpec {
    /// The Deployment, StatefulSet, DaemonSet or ReplicaSet owning the new pods.
    pub workload: String,
    /// Default: the workload's in any namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Default: the pod's first container.
    #[serde(default)]
    pub container: Option<String>,
    pub current: String,
}

/// How the write tools answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WritesSpec {
    /// Every write is refused as RBAC refuses it (`… is forbidden: User "…" cannot patch
    /// resource "deployments" …`), the world unchanged.
    #[serde(default)]
    pub forbidden: bool,
    /// The user named in the refusal; default [`DEFAULT_WRITER`].
    #[serde(default)]
    pub user: Option<String>,
}

/// The service account Firstline's write-capable MCP server runs as.
pub const DEFAULT_WRITER: &str = "system:serviceaccount:firstline:firstline-actions";

impl WritesSpec {
    /// The user a refusal names.
    pub fn user(&self) -> &str {
        self.user.as_deref().unwrap_or(DEFAULT_WRITER)
    }
}
