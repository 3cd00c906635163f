//! Workload controllers: Deployments (with their revisions, served as ReplicaSets),
//! StatefulSets, DaemonSets, Jobs and CronJobs. Status fields left out are computed from the
//! pods the workload owns (see `render::objects`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::pods::{ConditionSpec, OwnerSpec};
use crate::reltime::RelTime;

/// A Deployment with its revisions (served as ReplicaSets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentSpec {
    pub name: String,
    pub namespace: String,
    #[serde(default = "one")]
    pub replicas: u32,
    /// Container name in the pod template; default: the deployment's name.
    #[serde(default)]
    pub container: Option<String>,
    /// Oldest first; the last one is current.
    pub revisions: Vec<RevisionSpec>,
    /// `spec.selector.matchLabels`; default `{app: <name>}`. Its pods get these labels.
    #[serde(default)]
    pub selector: Option<BTreeMap<String, String>>,
    /// Counts left out are computed from the pods.
    #[serde(default)]
    pub status: Option<DeploymentStatusSpec>,
    /// Default: Available and Progressing from the counts.
    #[serde(default)]
    pub conditions: Vec<ConditionSpec>,
    #[serde(default)]
    pub paused: bool,
    /// Run time only: `metadata.generation` once a write changed the spec (default: the number
    /// of revisions).
    #[serde(skip)]
    pub generation: Option<u64>,
    /// Run time only: when a write last changed the spec (the conditions' last update).
    #[serde(skip)]
    pub changed: Option<RelTime>,
}

fn one() -> u32 {
    1
}

/// One rollout of a Deployment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevisionSpec {
    pub image: String,
    pub created: RelTime,
    /// `kubernetes.io/change-cause`.
    #[serde(default)]
    pub change_cause: Option<String>,
    /// Run time only: the `deployment.kubernetes.io/revision` a write gave it (default: its
    /// position, from 1).
    #[serde(skip)]
    pub number: Option<usize>,
    /// Run time only: its `pod-template-hash`, fixed before a write reorders the revisions.
    #[serde(skip)]
    pub hash: Option<String>,
    /// Run time only: the pod template's annotations (`kubectl.kubernetes.io/restartedAt`).
    #[serde(skip)]
    pub template_annotations: BTreeMap<String, String>,
    /// Run time only: the numbers it had before a rollback made it current again
    /// (`deployment.kubernetes.io/revision-history`).
    #[serde(skip)]
    pub history: Vec<usize>,
}

/// A Deployment's status counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeploymentStatusSpec {
    #[serde(default)]
    pub replicas: Option<u32>,
    #[serde(default)]
    pub ready_replicas: Option<u32>,
    #[serde(default)]
    pub available_replicas: Option<u32>,
    #[serde(default)]
    pub updated_replicas: Option<u32>,
}

/// A StatefulSet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StatefulSetSpec {
    pub name: String,
    pub namespace: String,
    #[serde(default = "one")]
    pub replicas: u32,
    /// Default `{app: <name>}`; its pods get these labels.
    #[serde(default)]
    pub selector: Option<BTreeMap<String, String>>,
    /// The pod template's image (default: its first pod's).
    #[serde(default)]
    pub image: Option<String>,
    #[serde(default)]
    pub status: Option<StatefulSetStatusSpec>,
    #[serde(default)]
    pub conditions: Vec<ConditionSpec>,
    #[serde(default)]
    pub volume_claim_templates: Vec<VolumeClaimTemplateSpec>,
    /// Run time only: `metadata.generation` once a write changed the spec (default 1).
    #[serde(skip)]
    pub generation: Option<u64>,
    /// Run time only: the pod template's annotations (`kubectl.kubernetes.io/restartedAt`).
    #[serde(skip)]
    pub template_annotations: BTreeMap<String, String>,
}

/// A StatefulSet's status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StatefulSetStatusSpec {
    #[serde(default)]
    pub replicas: Option<u32>,
    #[serde(default)]
    pub ready_replicas: Option<u32>,
    #[serde(default)]
    pub current_replicas: Option<u32>,
    #[serde(default)]
    pub updated_replicas: Option<u32>,
    #[serde(default)]
    pub current_revision: Option<String>,
    #[serde(default)]
    pub update_revision: Option<String>,
}

/// A StatefulSet's claim template: each pod gets a claim `<name>-<pod>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VolumeClaimTemplateSpec {
    pub name: String,
    #[serde(default)]
    pub storage_class: Option<String>,
    pub size: String,
}

/// A DaemonSet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DaemonSetSpec {
    pub name: String,
    pub namespace: String,
    /// Nodes that should run it; default: the number of its pods.
    #[serde(default)]
    pub desired: Option<u32>,
    #[serde(default)]
    pub selector: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub image: Option<String>,
    #[serde(default)]
    pub status: Option<DaemonSetStatusSpec>,
    #[serde(default)]
    pub conditions: Vec<ConditionSpec>,
    /// Run time only: `metadata.generation` once a write changed the spec (default 1).
    #[serde(skip)]
    pub generation: Option<u64>,
    /// Run time only: the pod template's annotations (`kubectl.kubernetes.io/restartedAt`).
    #[serde(skip)]
    pub template_annotations: BTreeMap<String, String>,
}

/// A DaemonSet's status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DaemonSetStatusSpec {
    #[serde(default)]
    pub desired_number_scheduled: Option<u32>,
    #[serde(default)]
    pub current_number_scheduled: Option<u32>,
    #[serde(default)]
    pub number_ready: Option<u32>,
    #[serde(default)]
    pub number_misscheduled: Option<u32>,
    #[serde(default)]
    pub number_unavailable: Option<u32>,
    #[serde(default)]
    pub updated_number_scheduled: Option<u32>,
}

/// A Job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JobSpec {
    pub name: String,
    pub namespace: String,
    /// `{kind: CronJob, name}` when a CronJob created it.
    #[serde(default)]
    pub owner: Option<OwnerSpec>,
    #[serde(default)]
    pub backoff_limit: Option<u32>,
    #[serde(default)]
    pub completions: Option<u32>,
    #[serde(default)]
    pub parallelism: Option<u32>,
    /// Default `-1h`.
    #[serde(default)]
    pub created: Option<RelTime>,
    #[serde(default)]
    pub image: Option<String>,
    /// Counts left out are computed from its pods' phases.
    #[serde(default)]
    pub status: Option<JobStatusSpec>,
    #[serde(default)]
    pub conditions: Vec<ConditionSpec>,
}

/// A Job's status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JobStatusSpec {
    #[serde(default)]
    pub active: Option<u32>,
    #[serde(default)]
    pub succeeded: Option<u32>,
    #[serde(default)]
    pub failed: Option<u32>,
    #[serde(default)]
    pub start_time: Option<RelTime>,
    #[serde(default)]
    pub completion_time: Option<RelTime>,
}

/// A CronJob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CronJobSpec {
    pub name: String,
    pub namespace: String,
    pub schedule: String,
    #[serde(default)]
    pub suspend: bool,
    #[serde(default)]
    pub last_schedule_time: Option<RelTime>,
    #[serde(default)]
    pub last_successful_time: Option<RelTime>,
    /// Default `Allow`.
    #[serde(default)]
    pub concurrency_policy: Option<String>,
}
