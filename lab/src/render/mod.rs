//! The world of a scenario rendered as the real MCP servers render it, so evidence from the lab
//! reads like evidence from production:
//!
//! - `pods_get` — the Pod object as YAML with sorted keys (kubernetes-mcp-server marshals the
//!   object with sigs.k8s.io/yaml);
//! - `events_list` — kubernetes-mcp-server's `# The following events (YAML format) were found:`
//!   list of `{InvolvedObject, Message, Namespace, Reason, Timestamp, Type}`;
//! - `pods_log` — plain text, or `The pod … has not logged any message yet`;
//! - `resources_list` / `resources_get` — ReplicaSets (one per deployment revision), Deployments
//!   and Pods as YAML;
//! - `execute_range_query` — prometheus-mcp-server's `{"resultType":"matrix","result":[…]}`;
//! - `query_loki_logs` / `search_tempo_traces` — mcp-grafana-like JSON (approximated: no Grafana
//!   server could be run to record the exact shape).
//!
//! Every function returns `Ok(text)` or `Err(message)`; the server turns an `Err` into a tool
//! error (`isError: true`), as the real servers do for a missing pod or a bad argument.
//!
//! One module per job: `objects` builds the Kubernetes objects (shared with the fake Kubernetes
//! API in `peers`), `kubernetes`, `prometheus` and `grafana` answer each real server's tools,
//! `selector` and `args` are what those tools share.

mod args;
mod grafana;
mod kubernetes;
mod objects;
mod prometheus;
mod selector;
#[cfg(test)]
mod tests;

pub use grafana::{query_loki_logs, search_tempo_traces};
pub use kubernetes::{
    events_list, pods_get, pods_list_in_namespace, pods_log, resources_get, resources_list, to_yaml,
};
pub use objects::{deployment_object, pod_object, replica_sets};
pub use prometheus::execute_range_query;

/// A tool's answer, or its error message.
pub type Rendered = Result<String, String>;
