//! The catalogue of actions Firstline may take on a cluster, with a person's approval: a fixed,
//! small set of reversible changes, each typed with what it touches and how it is undone. No
//! free-form command exists; an action is one of these variants or nothing.
//!
//! A round proposes at most one, from its verified cause (`firstline_investigation`); the worker
//! turns it into the exact change (the object as read, the object as it would be written) and
//! its hash, which the approval click is bound to; the decision moves a proposal through
//! [`ActionState`] once.

use serde::{Deserialize, Serialize};

/// A workload kind an action may restart or scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WorkloadKind {
    Deployment,
    StatefulSet,
}

impl WorkloadKind {
    /// Its Kubernetes `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::StatefulSet => "StatefulSet",
        }
    }
}

/// One catalogue action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Roll a Deployment back: its pod template becomes the one of revision `to_revision`.
    Rollback {
        namespace: String,
        deployment: String,
        /// The revision that broke (the current one when proposed).
        from_revision: u64,
        to_revision: u64,
    },
    /// `kubectl rollout restart`: every pod replaced by an identical one.
    Restart {
        namespace: String,
        kind: WorkloadKind,
        name: String,
    },
    /// Set a workload's replicas.
    Scale {
        namespace: String,
        kind: WorkloadKind,
        name: String,
        from: u32,
        to: u32,
    },
    /// Set a CronJob's `spec.suspend` (true: no new Jobs; false: resume).
    SuspendCronJob {
        namespace: String,
        name: String,
        suspend: bool,
    },
    /// Delete one pod its controller will replace.
    DeletePod { namespace: String, name: String },
    /// Set a node's `spec.unschedulable` (true: cordon; false: uncordon).
    Cordon { node: String, cordon: bool },
}

/// The object an action changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    /// `None` for a cluster-scoped object (a node).
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

impl Action {
    /// The object it changes.
    pub fn object(&self) -> ObjectRef {
        let namespaced = |api: &str, kind: &str, namespace: &str, name: &str| ObjectRef {
            api_version: api.to_string(),
            kind: kind.to_string(),
            namespace: Some(namespace.to_string()),
            name: name.to_string(),
        };
        match self {
            Self::Rollback {
                namespace,
                deployment,
                ..
            } => namespaced("apps/v1", "Deployment", namespace, deployment),
            Self::Restart {
                namespace,
                kind,
                name,
            }
            | Self::Scale {
                namespace,
                kind,
                name,
                ..
            } => namespaced("apps/v1", kind.as_str(), namespace, name),
            Self::SuspendCronJob {
                namespace, name, ..
            } => namespaced("batch/v1", "CronJob", namespace, name),
            Self::DeletePod { namespace, name } => namespaced("v1", "Pod", namespace, name),
            Self::Cordon { node, .. } => ObjectRef {
                api_version: "v1".to_string(),
                kind: "Node".to_string(),
                namespace: None,
                name: node.clone(),
            },
        }
    }

    /// The namespace whose approvers decide it; `None` for a node (only `*` approvers may).
    pub fn namespace(&self) -> Option<&str> {
        match self {
            Self::Rollback { namespace, .. }
            | Self::Restart { namespace, .. }
            | Self::Scale { namespace, .. }
            | Self::SuspendCronJob { namespace, .. }
            | Self::DeletePod { namespace, .. } => Some(namespace),
            Self::Cordon { .. } => None,
        }
    }

    /// The action that undoes it; `None` when nothing is left to undo (a restart or a deleted
    /// pod's replacement runs the same template as before).
    pub fn inverse(&self) -> Option<Action> {
        match self {
            Self::Rollback {
                namespace,
                deployment,
                from_revision,
                to_revision,
            } => Some(Self::Rollback {
                namespace: namespace.clone(),
                deployment: deployment.clone(),
                from_revision: *to_revision,
                to_revision: *from_revision,
            }),
            Self::Scale {
                namespace,
                kind,
                name,
                from,
                to,
            } => Some(Self::Scale {
                namespace: namespace.clone(),
                kind: *kind,
                name: name.clone(),
                from: *to,
                to: *from,
            }),
            Self::SuspendCronJob {
                namespace,
                name,
                suspend,
            } => Some(Self::SuspendCronJob {
                namespace: namespace.clone(),
                name: name.clone(),
                suspend: !suspend,
            }),
            Self::Cordon { node, cordon } => Some(Self::Cordon {
                node: node.clone(),
                cordon: !cordon,
            }),
            Self::Restart { .. } | Self::DeletePod { .. } => None,
        }
    }

    /// What it does, in one line of Slack mrkdwn.
    pub fn title(&self) -> String {
        match self {
            Self::Rollback {
                namespace,
                deployment,
                from_revision,
                to_revision,
            } => format!(
                "Roll back Deployment `{namespace}/{deployment}` from revision {from_revision} to revision {to_revision}"
            ),
            Self::Restart {
                namespace,
                kind,
                name,
            } => format!(
                "Restart {} `{namespace}/{name}` (rollout restart)",
                kind.as_str()
            ),
            Self::Scale {
                namespace,
                kind,
                name,
                from,
                to,
            } => format!(
                "Scale {} `{namespace}/{name}` from {from} to {to} replicas",
                kind.as_str()
            ),
            Self::SuspendCronJob {
                namespace,
                name,
                suspend: true,
            } => format!("Suspend CronJob `{namespace}/{name}`"),
            Self::SuspendCronJob {
                namespace,
                name,
                suspend: false,
            } => format!("Resume CronJob `{namespace}/{name}`"),
            Self::DeletePod { namespace, name } => {
                format!("Delete pod `{namespace}/{name}` (its controller replaces it)")
            }
            Self::Cordon { node, cordon: true } => format!("Cordon node `{node}`"),
            Self::Cordon {
                node,
                cordon: false,
            } => format!("Uncordon node `{node}`"),
        }
    }

    /// How it is undone, in one line.
    pub fn undo(&self) -> String {
        match self.inverse() {
            Some(inverse) => format!("Undo: {}", lowercase_first(&inverse.title())),
            None => match self {
                Self::DeletePod { .. } => {
                    "Nothing to undo: the replacement runs the same template".to_string()
                }
                _ => "Nothing to undo: the new pods run the same template".to_string(),
            },
        }
    }
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Where a proposal is in its life. Each step happens once (a conditional update in Postgres).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionState {
    /// Shown with Approve and Reject; nobody decided yet.
    Proposed,
    Approved,
    Rejected,
    /// Nobody decided within `actions.approval_timeout_secs`.
    Expired,
    /// The write was sent and answered; its result and verification are on the row.
    Executed,
    /// The write was refused or failed (the object moved on, RBAC, the server down).
    Failed,
}

impl ActionState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Proposed => "proposed",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Expired => "expired",
            Self::Executed => "executed",
            Self::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Proposed,
            Self::Approved,
            Self::Rejected,
            Self::Expired,
            Self::Executed,
            Self::Failed,
        ]
        .into_iter()
        .find(|state| state.as_str() == text)
    }
}

/// A person's decision on a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Reject,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Reject => "reject",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "approve" => Some(Self::Approve),
            "reject" => Some(Self::Reject),
            _ => None,
        }
    }
}

/// The Approve/Reject buttons' `block_id`: `firstline.action.<action id>`. The button's value carries the
/// change's hash, so a click is bound to the exact change it was shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionBlock {
    pub action_id: i64,
}

impl ActionBlock {
    const PREFIX: &'static str = "firstline.action.";

    pub fn block_id(&self) -> String {
        format!("{}{}", Self::PREFIX, self.action_id)
    }

    pub fn parse(block_id: &str) -> Option<Self> {
        let action_id = block_id.strip_prefix(Self::PREFIX)?.parse().ok()?;
        Some(Self { action_id })
    }

    /// A button's value: the decision and the change's hash.
    pub fn value(decision: Decision, hash: &str) -> String {
        format!("{}:{hash}", decision.as_str())
    }

    /// A button's value read back: `(decision, hash)`.
    pub fn parse_value(value: &str) -> Option<(Decision, &str)> {
        let (decision, hash) = value.split_once(':')?;
        Some((Decision::parse(decision)?, hash))
    }
}

/// The `decision` signal: a decision recorded on a proposal (the row is the truth; the signal
/// only wakes the round).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionSignal {
    pub action_id: i64,
    pub decision: Decision,
    pub user: String,
}

/// Schema name of an action's Kafka record.
pub const ACTION_SCHEMA: &str = "firstline.action.v1";

/// An action's audit, published once when it reaches its last state (rejected, expired, failed,
/// or executed and verified): the `actions` row as a record, keyed by its thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// Always [`ACTION_SCHEMA`].
    pub schema: String,
    pub action_id: i64,
    pub thread: crate::ThreadKey,
    pub round: u32,
    pub action: Action,
    pub cause: String,
    pub change_hash: String,
    pub state: ActionState,
    /// RFC 3339 times.
    pub proposed_at: String,
    pub decided_by: Option<String>,
    pub decided_at: Option<String>,
    pub executed_at: Option<String>,
    pub result: Option<String>,
    /// Recovered or not, with the values read.
    pub verification: Option<serde_json::Value>,
}

/// A `wake` outbox row for a decision: signals `decision` to the thread's running round (never
/// starts one: a round that no longer waits has nothing to do with it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionWake {
    pub thread: crate::ThreadKey,
    pub decision: DecisionSignal,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reversible_action_undoes_to_itself_twice() {
        let actions = [
            Action::Rollback {
                namespace: "shop".into(),
                deployment: "checkout".into(),
                from_revision: 7,
                to_revision: 6,
            },
            Action::Scale {
                namespace: "shop".into(),
                kind: WorkloadKind::StatefulSet,
                name: "cart".into(),
                from: 0,
                to: 3,
            },
            Action::SuspendCronJob {
                namespace: "shop".into(),
                name: "export".into(),
                suspend: true,
            },
            Action::Cordon {
                node: "worker-3".into(),
                cordon: true,
            },
        ];
        for action in actions {
            let inverse = action.inverse().expect("reversible");
            assert_ne!(inverse, action);
            assert_eq!(inverse.inverse(), Some(action));
        }
        let restart = Action::Restart {
            namespace: "shop".into(),
            kind: WorkloadKind::Deployment,
            name: "checkout".into(),
        };
        assert_eq!(restart.inverse(), None);
        assert!(restart.undo().starts_with("Nothing to undo"));
    }

    #[test]
    fn a_node_has_no_namespace_and_titles_name_the_object() {
        let cordon = Action::Cordon {
            node: "worker-3".into(),
            cordon: true,
        };
        assert_eq!(cordon.namespace(), None);
        assert_eq!(cordon.object().to_string(), "Node worker-3");
        assert_eq!(cordon.undo(), "Undo: uncordon node `worker-3`");
        let rollback = Action::Rollback {
            namespace: "shop".into(),
            deployment: "checkout".into(),
            from_revision: 7,
            to_revision: 6,
        };
        assert_eq!(rollback.object().to_string(), "Deployment shop/checkout");
        assert!(rollback.title().contains("from revision 7 to revision 6"));
    }

    #[test]
    fn the_button_binds_the_decision_to_the_hash() {
        let block = ActionBlock { action_id: 42 };
        assert_eq!(ActionBlock::parse(&block.block_id()), Some(block));
        assert_eq!(ActionBlock::parse("fl:q:1:2"), None);
        let value = ActionBlock::value(Decision::Approve, "ab12");
        assert_eq!(
            ActionBlock::parse_value(&value),
            Some((Decision::Approve, "ab12"))
        );
        assert_eq!(ActionBlock::parse_value("maybe:ab12"), None);
        for state in [
            "proposed", "approved", "rejected", "expired", "executed", "failed",
        ] {
            assert_eq!(ActionState::parse(state).map(|s| s.as_str()), Some(state));
        }
    }
}
