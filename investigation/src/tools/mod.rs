//! Tools: how the investigation asks the outside world for evidence.
//!
//! The incident graph never names an MCP server or tool. It asks for a *capability* — "the
//! previous log of container X in pod Y" — through [`EvidenceSource`], and the tool layer maps
//! that onto whatever server and tool the operator configured (kubernetes-mcp-server, Grafana's
//! MCP server, Prometheus's, or the lab's). A failure of any kind comes back as
//! [`Fetched::Missing`], which the report records as missing evidence; it never aborts a round.
//!
//! Layout:
//! - this file — the interface ([`CapabilityRequest`], [`Fetched`], [`EvidenceSource`]);
//! - [`mcp`] — [`McpTools`] (servers + bindings, built from `mcp` settings) and [`RoundTools`]
//!   (one round's [`EvidenceSource`]): allowlist, cache, limits, redaction, audit;
//! - [`profiles`] — built-in capability bindings for real servers and the lab;
//! - [`template`] — how request fields become tool arguments;
//! - `setup` (settings → plan), `client` (rmcp connections), `output` (result text, size cap),
//!   `record` (`tool_cache` and `audit` rows).

use crate::evidence::{Capability, MissingEvidence};
use chrono::{DateTime, Utc};
use std::future::Future;

/// One request for evidence, in the investigation's terms.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "capability", rename_all = "snake_case")]
pub enum CapabilityRequest {
    /// The pod object with its container statuses (describe / get).
    PodDescribe {
        /// Namespace.
        namespace: String,
        /// Pod name.
        pod: String,
    },
    /// One object by kind and name: a workload's spec, status and conditions (a Job's
    /// `BackoffLimitExceeded`), a Service's selector, a Node's conditions, a PVC's phase.
    ObjectGet {
        /// Namespace; `None` for cluster-scoped kinds (Node, StorageClass, PersistentVolume).
        namespace: Option<String>,
        /// Kubernetes kind as the API names it (`Job`, `Deployment`, `Node`).
        kind: String,
        /// Object name.
        name: String,
    },
    /// Objects of one kind (the Jobs of a namespace, its quotas), optionally by label selector.
    ObjectList {
        /// Namespace; `None` for cluster-scoped kinds or all namespaces.
        namespace: Option<String>,
        /// Kubernetes kind as the API names it.
        kind: String,
        /// Label selector, e.g. `app=checkout`.
        label_selector: Option<String>,
    },
    /// The pods of a namespace, all of them or those matching a label selector (a workload's
    /// selector, `job-name=<job>`).
    PodList {
        /// Namespace.
        namespace: String,
        /// Label selector, e.g. `job-name=backup`; `None` lists every pod of the namespace.
        label_selector: Option<String>,
    },
    /// A container's log: the current one, or the previous (crashed) one.
    PodLogs {
        /// Namespace.
        namespace: String,
        /// Pod name.
        pod: String,
        /// Container; `None` means the pod's only or default container.
        container: Option<String>,
        /// The previous container instance's log (the one that crashed).
        previous: bool,
        /// At most this many lines from the end.
        tail_lines: u32,
    },
    /// Events in a namespace, optionally for one involved object, optionally warnings only.
    Events {
        /// Namespace.
        namespace: String,
        /// Name of the involved object (pod, deployment), if known.
        object: Option<String>,
        /// Only `type=Warning` events (a namespace-wide sweep).
        warnings_only: bool,
    },
    /// Rollout / deploy history of a workload.
    DeployHistory {
        /// Namespace.
        namespace: String,
        /// Deployment (or other workload) name.
        workload: String,
    },
    /// A Prometheus range query.
    MetricRange {
        /// PromQL.
        query: String,
        /// Window start.
        start: DateTime<Utc>,
        /// Window end.
        end: DateTime<Utc>,
        /// Resolution in seconds.
        step_secs: u32,
    },
    /// A log query (Loki's LogQL).
    LogQuery {
        /// LogQL.
        query: String,
        /// Window start.
        start: DateTime<Utc>,
        /// Window end.
        end: DateTime<Utc>,
        /// At most this many lines.
        limit: u32,
    },
    /// A trace search (Tempo).
    TraceSearch {
        /// Service name.
        service: String,
        /// Window start.
        start: DateTime<Utc>,
        /// Window end.
        end: DateTime<Utc>,
        /// At most this many traces.
        limit: u32,
    },
}

impl CapabilityRequest {
    /// The capability this request exercises.
    pub fn capability(&self) -> Capability {
        match self {
            CapabilityRequest::PodDescribe { .. } => Capability::PodDescribe,
            CapabilityRequest::ObjectGet { .. } => Capability::ObjectGet,
            CapabilityRequest::ObjectList { .. } => Capability::ObjectList,
            CapabilityRequest::PodList { .. } => Capability::PodList,
            CapabilityRequest::PodLogs { previous: true, .. } => Capability::PodLogsPrevious,
            CapabilityRequest::PodLogs {
                previous: false, ..
            } => Capability::PodLogsCurrent,
            CapabilityRequest::Events { .. } => Capability::Events,
            CapabilityRequest::DeployHistory { .. } => Capability::DeployHistory,
            CapabilityRequest::MetricRange { .. } => Capability::MetricRange,
            CapabilityRequest::LogQuery { .. } => Capability::LogQuery,
            CapabilityRequest::TraceSearch { .. } => Capability::TraceSearch,
        }
    }
}

/// What one concrete tool call returned.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolOutput {
    /// The capability it answered.
    pub capability: Capability,
    /// Configured server name.
    pub server: String,
    /// The server's tool name.
    pub tool: String,
    /// The arguments sent (already redacted if they held anything secret).
    pub args: serde_json::Value,
    /// The result text: redacted and capped to the tool's size limit, not yet excerpted.
    pub text: String,
    /// When the call was made (for a cached result: when it was first made).
    pub fetched_at: DateTime<Utc>,
    /// Served from the tool cache instead of calling the server.
    pub cached: bool,
}

/// The outcome of one capability request.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Fetched {
    /// The tool answered.
    Found(ToolOutput),
    /// It could not: not configured, refused, timed out, errored, or returned nothing usable.
    Missing(MissingEvidence),
}

/// Where evidence comes from. The MCP tool layer implements it for production and the lab;
/// graph nodes are generic over it.
pub trait EvidenceSource: Send + Sync + 'static {
    /// Fetches one piece of evidence. Never panics and never fails: failure is
    /// [`Fetched::Missing`] with a reason an on-call engineer can act on.
    fn fetch(&self, request: CapabilityRequest) -> impl Future<Output = Fetched> + Send;

    /// Whether a configured server offers `capability` at all (an unconfigured one is skipped,
    /// not asked and failed).
    fn supports(&self, capability: &Capability) -> bool {
        let _ = capability;
        true
    }
}

mod client;
mod http;
pub mod mcp;
mod output;
pub mod profiles;
mod record;
mod setup;
pub mod template;

pub use mcp::{CallScope, ListedTool, McpTools, RoundTools, Written};
pub use setup::ToolConfigError;
