//! Pods and what is said about them: containers (and init containers) with their states,
//! conditions, owners, events and container logs.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::reltime::RelTime;

/// A pod and its containers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodSpec {
    pub name: String,
    pub namespace: String,
    #[serde(default)]
    pub node: Option<String>,
    /// `status.podIP` of a scheduled pod; default: derived from the name (see
    /// `render::pod_ips`). Two pods may not state the same one.
    #[serde(default)]
    pub ip: Option<Ipv4Addr>,
    /// Default labels are added for the owner (see the README); these win.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The Deployment owning it (its ReplicaSet is the deployment's latest revision, or
    /// `revision`).
    #[serde(default)]
    pub deployment: Option<String>,
    /// With `deployment`: the 1-based revision whose ReplicaSet owns the pod (default: latest).
    #[serde(default)]
    pub revision: Option<usize>,
    /// Any other controller: `{kind: StatefulSet | DaemonSet | Job | ReplicaSet, name}`.
    #[serde(default)]
    pub owner: Option<OwnerSpec>,
    /// Default: `Running`; `Pending` when no node is set or an init container has not finished.
    #[serde(default)]
    pub phase: Option<String>,
    /// Pod-level status reason (`Evicted`) and message.
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    /// Default `Burstable`.
    #[serde(default)]
    pub qos_class: Option<String>,
    /// Creation time; default `-1h`.
    #[serde(default)]
    pub created: Option<RelTime>,
    /// Pod conditions; default: PodScheduled, Initialized, and Ready from the containers.
    #[serde(default)]
    pub conditions: Vec<ConditionSpec>,
    /// Run to completion, in order, before `containers` start.
    #[serde(default)]
    pub init_containers: Vec<ContainerSpec>,
    pub containers: Vec<ContainerSpec>,
    /// Copied into the pod's `spec` verbatim (e.g. `nodeSelector`, `tolerations`, `volumes`).
    #[serde(default)]
    pub spec_extra: BTreeMap<String, Value>,
    /// Run time only: the annotations its template gave a pod a write created.
    #[serde(skip)]
    pub annotations: BTreeMap<String, String>,
}

/// The controller owning a pod, a Job (`CronJob`) or referenced by an autoscaler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerSpec {
    pub kind: String,
    pub name: String,
}

/// A condition (pod, workload, node, autoscaler): `at` is its last transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConditionSpec {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub at: Option<RelTime>,
}

/// A container with its status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContainerSpec {
    pub name: String,
    pub image: String,
    #[serde(default = "yes")]
    pub ready: bool,
    #[serde(default)]
    pub restart_count: u32,
    /// Default: running since an hour before the alert (an init container: completed when
    /// the pod was created; a container waiting for init containers: `PodInitializing`).
    #[serde(default)]
    pub state: Option<ContainerStateSpec>,
    #[serde(default)]
    pub last_state: Option<ContainerStateSpec>,
    /// `{limits: {memory: 256Mi}, requests: {cpu: 100m}}`.
    #[serde(default)]
    pub resources: BTreeMap<String, BTreeMap<String, String>>,
    /// Copied into the container's spec verbatim (`env`, `args`, `readinessProbe`, …).
    #[serde(default)]
    pub spec_extra: BTreeMap<String, Value>,
}

pub(super) fn yes() -> bool {
    true
}

/// Kubernetes' ContainerState: exactly one of the three.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContainerStateSpec {
    #[serde(default)]
    pub waiting: Option<WaitingSpec>,
    #[serde(default)]
    pub running: Option<RunningSpec>,
    #[serde(default)]
    pub terminated: Option<TerminatedSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WaitingSpec {
    pub reason: String,
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunningSpec {
    #[serde(default)]
    pub started_at: Option<RelTime>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TerminatedSpec {
    pub exit_code: i32,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub signal: Option<i32>,
    #[serde(default)]
    pub started_at: Option<RelTime>,
    #[serde(default)]
    pub finished_at: Option<RelTime>,
}

/// A Kubernetes event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventSpec {
    /// `Normal` (default) or `Warning`.
    #[serde(default = "normal", rename = "type")]
    pub kind: String,
    pub reason: String,
    pub message: String,
    pub involved_object: ObjectRef,
    /// Default: the involved object's namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// When it was last seen (relative to the alert).
    pub at: RelTime,
    #[serde(default)]
    pub count: Option<u32>,
}

fn normal() -> String {
    "Normal".into()
}

impl EventSpec {
    /// The namespace it is listed in: its own, the object's, or `default`.
    pub fn namespace(&self) -> String {
        self.namespace
            .clone()
            .or_else(|| self.involved_object.namespace.clone())
            .unwrap_or_else(|| "default".into())
    }
}

/// The object an event is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectRef {
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

/// A container's logs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSpec {
    pub pod: String,
    /// Default: the pod's only container. May name an init container.
    #[serde(default)]
    pub container: Option<String>,
    #[serde(default)]
    pub current: Option<String>,
    /// The previous (terminated) instance's log.
    #[serde(default)]
    pub previous: Option<String>,
}
