//! The scenario format: one incident, as `lab/scenarios/<name>/scenario.yaml` (documented in
//! `lab/README.md`).
//!
//! A scenario holds the Slack alert, the world the tools see (pods, workloads, services,
//! ingresses, network policies, disruption budgets, nodes, storage, events, logs, metric series,
//! log streams, node journals, traces — all at times relative to the alert), optional verbatim tool results for fault injection, optional past incidents and
//! thread replies, and the expectation the investigation is scored against. Kubernetes-shaped
//! fields use Kubernetes' own camelCase names (`restartCount`, `lastState`, `exitCode`);
//! everything else is snake_case. Unknown keys are errors, so a typo never silently drops part
//! of the world.
//!
//! One module per part of the world: [`pods`] (pods, events, logs), [`workloads`]
//! (Deployments, StatefulSets, DaemonSets, Jobs, CronJobs), [`cluster`] (Services, Nodes and
//! their journals, storage, autoscalers, quotas, ConfigMaps), [`network`] (Ingresses,
//! NetworkPolicies), [`policy`] (PodDisruptionBudgets), [`telemetry`] (metrics, log streams,
//! traces, verbatim tool results), [`expect`] (the expected outcome), [`actions`] (what happens
//! after a write: `after_action`, `writes`); `validate` checks what serde cannot
//! (cross-references, exactly-one-of fields, unique pod IPs). [`live`] is what writes leave
//! behind at run time (resource versions, applied annotations), never read from a file.

pub mod actions;
pub mod cluster;
pub mod expect;
pub mod live;
pub mod network;
pub mod pods;
pub mod policy;
pub mod telemetry;
mod validate;
pub mod workloads;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::reltime::RelTime;

pub use actions::{ActionMatch, AfterActionSpec, AfterLogSpec, Change, DEFAULT_WRITER, WritesSpec};
pub use cluster::{
    ClaimRefSpec, ConfigMapSpec, EndpointsSpec, HorizontalPodAutoscalerSpec, JournalLineSpec,
    NodeSpec, PersistentVolumeClaimSpec, PersistentVolumeSpec, ResourceQuotaSpec, ServicePortSpec,
    ServiceSpec, StorageClassSpec, TaintSpec, TargetRefSpec, VolumeAttachmentSpec, VolumeErrorSpec,
};
pub use expect::{Expect, ExpectCheck, ExpectedVerdict, HeadlineCheck, Reply};
pub use network::{
    IngressPathSpec, IngressRuleSpec, IngressSpec, IngressTlsSpec, NetworkPolicySpec, PortRef,
};
pub use pods::{
    ConditionSpec, ContainerSpec, ContainerStateSpec, EventSpec, LogSpec, ObjectRef, OwnerSpec,
    PodSpec, RunningSpec, TerminatedSpec, WaitingSpec,
};
pub use policy::{IntOrPercent, PodDisruptionBudgetSpec, PodDisruptionBudgetStatusSpec};
pub use telemetry::{
    LogLineSpec, LogStreamSpec, MetricSpec, RawToolResult, SpanSpec, StepSpec, TraceSpec,
    TraceStatus,
};
pub use workloads::{
    CronJobSpec, DaemonSetSpec, DaemonSetStatusSpec, DeploymentSpec, DeploymentStatusSpec, JobSpec,
    JobStatusSpec, RevisionSpec, StatefulSetSpec, StatefulSetStatusSpec, VolumeClaimTemplateSpec,
};

/// Why a scenario could not be loaded. Messages name the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: `{field}`: {message}")]
    Invalid {
        path: PathBuf,
        field: String,
        message: String,
    },
}

/// A loaded scenario, with its alert time fixed.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The directory name.
    pub name: String,
    /// Where it was loaded from (`…/scenario.yaml`).
    pub path: PathBuf,
    /// When the alert fired; the world's relative times are relative to this.
    pub alert_at: DateTime<Utc>,
    /// The file's content.
    pub spec: ScenarioSpec,
}

/// The content of `scenario.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// What the scenario is about, for people.
    #[serde(default)]
    pub description: Option<String>,
    pub alert: AlertSpec,
    #[serde(default)]
    pub pods: Vec<PodSpec>,
    #[serde(default)]
    pub events: Vec<EventSpec>,
    #[serde(default)]
    pub deployments: Vec<DeploymentSpec>,
    #[serde(default)]
    pub statefulsets: Vec<StatefulSetSpec>,
    #[serde(default)]
    pub daemonsets: Vec<DaemonSetSpec>,
    #[serde(default)]
    pub jobs: Vec<JobSpec>,
    #[serde(default)]
    pub cronjobs: Vec<CronJobSpec>,
    #[serde(default)]
    pub services: Vec<ServiceSpec>,
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
    #[serde(default)]
    pub persistentvolumeclaims: Vec<PersistentVolumeClaimSpec>,
    #[serde(default)]
    pub persistentvolumes: Vec<PersistentVolumeSpec>,
    #[serde(default)]
    pub storageclasses: Vec<StorageClassSpec>,
    #[serde(default)]
    pub volumeattachments: Vec<VolumeAttachmentSpec>,
    #[serde(default)]
    pub horizontalpodautoscalers: Vec<HorizontalPodAutoscalerSpec>,
    #[serde(default)]
    pub resourcequotas: Vec<ResourceQuotaSpec>,
    #[serde(default)]
    pub configmaps: Vec<ConfigMapSpec>,
    #[serde(default)]
    pub ingresses: Vec<IngressSpec>,
    #[serde(default)]
    pub networkpolicies: Vec<NetworkPolicySpec>,
    #[serde(default)]
    pub poddisruptionbudgets: Vec<PodDisruptionBudgetSpec>,
    #[serde(default)]
    pub logs: Vec<LogSpec>,
    #[serde(default)]
    pub metrics: Vec<MetricSpec>,
    #[serde(default)]
    pub log_streams: Vec<LogStreamSpec>,
    #[serde(default)]
    pub traces: Vec<TraceSpec>,
    #[serde(default)]
    pub raw_tool_results: Vec<RawToolResult>,
    #[serde(default)]
    pub past_incidents: Vec<PastIncident>,
    #[serde(default)]
    pub thread_replies: Vec<ThreadReply>,
    /// What the world looks like once an action was executed through the write tools.
    #[serde(default)]
    pub after_action: Option<AfterActionSpec>,
    /// How the write tools answer (refused, as RBAC would).
    #[serde(default)]
    pub writes: WritesSpec,
    pub expect: Expect,
    /// What writes left behind (run time only).
    #[serde(skip)]
    pub live: live::Live,
}

/// The alert as an integration posts it to Slack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertSpec {
    /// The message text. `{{at}}` is replaced by the alert time (RFC 3339).
    pub text: String,
    #[serde(default)]
    pub integration: Option<Integration>,
    /// When the alert fired: relative to now (`-10m`) or absolute. Default: now.
    #[serde(default)]
    pub at: Option<RelTime>,
}

/// Which integration posted the alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Integration {
    Alertmanager,
    Grafana,
    Generic,
}

/// A past incident recall may surface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PastIncident {
    pub title: String,
    #[serde(default)]
    pub alertname: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    pub summary: String,
    #[serde(default)]
    pub root_cause: Option<String>,
    #[serde(default)]
    pub resolution: Option<String>,
    #[serde(default)]
    pub thread_link: Option<String>,
    #[serde(default)]
    pub at: Option<RelTime>,
}

/// A human reply in the incident thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadReply {
    pub user: String,
    pub text: String,
    #[serde(default)]
    pub at: Option<RelTime>,
}

impl Scenario {
    /// Loads `dir/scenario.yaml` with the alert placed relative to now.
    pub fn load(dir: &Path) -> Result<Self, ScenarioError> {
        Self::load_at(dir, Utc::now())
    }

    /// Loads `dir/scenario.yaml` (or `dir` itself if it is a file) with `now` as the base of
    /// the alert time.
    pub fn load_at(dir: &Path, now: DateTime<Utc>) -> Result<Self, ScenarioError> {
        let path = if dir.is_file() {
            dir.to_path_buf()
        } else {
            dir.join("scenario.yaml")
        };
        let text = std::fs::read_to_string(&path).map_err(|source| ScenarioError::Read {
            path: path.clone(),
            source,
        })?;
        let name = if dir.is_file() {
            dir.parent()
        } else {
            Some(dir)
        }
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".into());
        Self::parse(&name, &path, &text, now)
    }

    /// Parses scenario text (`path` is only used in messages).
    pub fn parse(
        name: &str,
        path: &Path,
        text: &str,
        now: DateTime<Utc>,
    ) -> Result<Self, ScenarioError> {
        let spec: ScenarioSpec =
            serde_norway::from_str(text).map_err(|e| ScenarioError::Parse {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        validate::validate(&spec).map_err(|(field, message)| ScenarioError::Invalid {
            path: path.to_path_buf(),
            field,
            message,
        })?;
        let alert_at = spec
            .alert
            .at
            .map_or(now, |at| at.at(now))
            .with_timezone(&Utc);
        Ok(Self {
            name: name.to_string(),
            path: path.to_path_buf(),
            alert_at,
            spec,
        })
    }

    /// The alert text as posted, with `{{at}}` filled in.
    pub fn alert_text(&self) -> String {
        self.spec.alert.text.replace(
            "{{at}}",
            &self
                .alert_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        )
    }

    /// A time of the world, relative to the alert.
    pub fn time(&self, at: RelTime) -> DateTime<Utc> {
        at.at(self.alert_at)
    }
}

/// Loads every scenario directory under `root` (each holding a `scenario.yaml`), by name.
pub fn load_all(root: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let entries = std::fs::read_dir(root).map_err(|source| ScenarioError::Read {
        path: root.to_path_buf(),
        source,
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("scenario.yaml").is_file())
        .collect();
    dirs.sort();
    dirs.iter().map(|d| Scenario::load(d)).collect()
}

/// Scalars in string maps (`capacity`, `hard`, `data`): Kubernetes serves quantities and
/// ConfigMap values as strings, but a scenario may write `cpu: 4` or `enabled: true`.
pub(crate) fn string_map<'de, D>(
    deserializer: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scalar {
        Text(String),
        Int(i64),
        Float(f64),
        Bool(bool),
    }
    let raw = std::collections::BTreeMap::<String, Scalar>::deserialize(deserializer)?;
    Ok(raw
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                Scalar::Text(s) => s,
                Scalar::Int(n) => n.to_string(),
                Scalar::Float(f) => f.to_string(),
                Scalar::Bool(b) => b.to_string(),
            };
            (k, text)
        })
        .collect())
}

#[cfg(test)]
mod tests;
