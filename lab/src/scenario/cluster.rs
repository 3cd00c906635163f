//! The cluster around the workloads: Services (with computed Endpoints), Nodes (with their
//! journal), storage (PersistentVolumeClaims, PersistentVolumes, StorageClasses,
//! VolumeAttachments), HorizontalPodAutoscalers, ResourceQuotas and ConfigMaps.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::pods::{ConditionSpec, OwnerSpec, yes};
use super::string_map;
use crate::reltime::RelTime;

/// A Service; its Endpoints are computed from the pods its selector picks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServiceSpec {
    pub name: String,
    pub namespace: String,
    /// Default `ClusterIP`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub selector: BTreeMap<String, String>,
    #[serde(default)]
    pub ports: Vec<ServicePortSpec>,
    /// Default: a stable made-up 10.96.x.y.
    #[serde(default, rename = "clusterIP")]
    pub cluster_ip: Option<String>,
    /// Replaces the computed Endpoints.
    #[serde(default)]
    pub endpoints: Option<EndpointsSpec>,
}

/// A Service port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServicePortSpec {
    pub port: u16,
    /// A number or a container port name; default: `port`.
    #[serde(default)]
    pub target_port: Option<Value>,
    /// Default `TCP`.
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

/// Explicit Endpoints addresses (IPs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EndpointsSpec {
    #[serde(default)]
    pub addresses: Vec<String>,
    #[serde(default)]
    pub not_ready_addresses: Vec<String>,
}

/// A Node. Nodes that pods name but `nodes` does not list are served as Ready nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeSpec {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Standard types left out are healthy (Ready True, pressures False).
    #[serde(default)]
    pub conditions: Vec<ConditionSpec>,
    #[serde(default)]
    pub taints: Vec<TaintSpec>,
    #[serde(default)]
    pub unschedulable: bool,
    #[serde(default, deserialize_with = "string_map")]
    pub capacity: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "string_map")]
    pub allocatable: BTreeMap<String, String>,
    #[serde(default)]
    pub kubelet_version: Option<String>,
    /// The node's systemd journal, served as Loki streams
    /// `{job="systemd-journal", node, unit}` (one per unit).
    #[serde(default)]
    pub journal: Vec<JournalLineSpec>,
}

/// One line of a node's systemd journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalLineSpec {
    pub at: RelTime,
    pub line: String,
    /// The systemd unit; default `kubelet`.
    #[serde(default)]
    pub unit: Option<String>,
}

impl JournalLineSpec {
    /// The unit the line is labelled with.
    pub fn unit(&self) -> &str {
        self.unit.as_deref().unwrap_or("kubelet")
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaintSpec {
    pub key: String,
    #[serde(default)]
    pub value: Option<String>,
    pub effect: String,
}

/// A PersistentVolumeClaim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PersistentVolumeClaimSpec {
    pub name: String,
    pub namespace: String,
    #[serde(default)]
    pub storage_class: Option<String>,
    /// `Pending`, `Bound` (default) or `Lost`.
    #[serde(default)]
    pub phase: Option<String>,
    /// The bound volume's name (default for a Bound claim: `pvc-<uid>`).
    #[serde(default)]
    pub volume: Option<String>,
    /// `spec.resources.requests.storage`, e.g. `10Gi`.
    #[serde(default)]
    pub requested: Option<String>,
    /// `status.capacity.storage` of a Bound claim (default: `requested`).
    #[serde(default)]
    pub capacity: Option<String>,
    /// Default `[ReadWriteOnce]`.
    #[serde(default)]
    pub access_modes: Vec<String>,
}

/// A PersistentVolume (cluster-scoped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PersistentVolumeSpec {
    pub name: String,
    #[serde(default)]
    pub capacity: Option<String>,
    /// Default `Bound` with a claim, else `Available`.
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub claim: Option<ClaimRefSpec>,
    #[serde(default)]
    pub storage_class: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
}

/// The claim a PersistentVolume is bound to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRefSpec {
    pub namespace: String,
    pub name: String,
}

/// A StorageClass (cluster-scoped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StorageClassSpec {
    pub name: String,
    pub provisioner: String,
    /// Annotated `storageclass.kubernetes.io/is-default-class: "true"`.
    #[serde(default)]
    pub default: bool,
    /// Default `Immediate`.
    #[serde(default)]
    pub volume_binding_mode: Option<String>,
    #[serde(default)]
    pub allow_volume_expansion: bool,
}

/// A VolumeAttachment (storage.k8s.io/v1, cluster-scoped): a CSI volume attached, or failing
/// to attach, to a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VolumeAttachmentSpec {
    /// Default: `csi-<hash>` of the attacher, volume and node, as the attach/detach controller
    /// names them.
    #[serde(default)]
    pub name: Option<String>,
    /// The CSI driver, e.g. `ebs.csi.aws.com`.
    pub attacher: String,
    pub node: String,
    /// `spec.source.persistentVolumeName`.
    pub persistent_volume: String,
    /// `status.attached`; default true.
    #[serde(default = "yes")]
    pub attached: bool,
    #[serde(default)]
    pub attach_error: Option<VolumeErrorSpec>,
    #[serde(default)]
    pub detach_error: Option<VolumeErrorSpec>,
}

/// A VolumeAttachment's `attachError` / `detachError`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolumeErrorSpec {
    pub message: String,
    /// When it happened; default: the alert time.
    #[serde(default)]
    pub at: Option<RelTime>,
}

/// A HorizontalPodAutoscaler (served as autoscaling/v2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HorizontalPodAutoscalerSpec {
    pub name: String,
    pub namespace: String,
    /// `{kind: Deployment, name}`.
    pub target: TargetRefSpec,
    #[serde(default)]
    pub min_replicas: Option<u32>,
    pub max_replicas: u32,
    /// Default: the target Deployment's or StatefulSet's replicas.
    #[serde(default)]
    pub current_replicas: Option<u32>,
    /// Default: `currentReplicas`.
    #[serde(default)]
    pub desired_replicas: Option<u32>,
    /// Served verbatim as `spec.metrics`.
    #[serde(default)]
    pub metrics: Vec<Value>,
    /// Served verbatim as `status.currentMetrics`.
    #[serde(default)]
    pub current_metrics: Vec<Value>,
    #[serde(default)]
    pub conditions: Vec<ConditionSpec>,
}

/// What an autoscaler scales.
pub type TargetRefSpec = OwnerSpec;

/// A ResourceQuota.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceQuotaSpec {
    pub name: String,
    pub namespace: String,
    #[serde(default, deserialize_with = "string_map")]
    pub hard: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "string_map")]
    pub used: BTreeMap<String, String>,
}

/// A ConfigMap (Secrets are never served).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigMapSpec {
    pub name: String,
    pub namespace: String,
    #[serde(default, deserialize_with = "string_map")]
    pub data: BTreeMap<String, String>,
}
