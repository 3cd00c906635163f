//! The world of a scenario rendered as the real MCP servers render it, so evidence from the lab
//! reads like evidence from production:
//!
//! - kubernetes-mcp-server (`kubernetes`): `pods_get`, `pods_list_in_namespace`, `pods_list`,
//!   `resources_get`, `resources_list`, `namespaces_list` — objects as YAML with sorted keys
//!   (the server marshals them with sigs.k8s.io/yaml); `events_list` — its
//!   `# The following events (YAML format) were found:` list; `pods_log` — plain text, or
//!   `The pod … has not logged any message yet`;
//! - prometheus-mcp-server (`prometheus`): `execute_range_query` / `execute_query` —
//!   `{"resultType":"matrix"|"vector","result":[…]}`;
//! - mcp-grafana (`grafana`): `query_loki_logs` / `search_tempo_traces` — JSON (approximated:
//!   no Grafana server could be run to record the exact shape).
//!
//! Every function returns `Ok(text)` or `Err(message)`; the server turns an `Err` into a tool
//! error (`isError: true`), as the real servers do for a missing pod or a bad argument.
//!
//! One module per job: `world` indexes the scenario (owners, hashes, addresses; `pod_ips`
//! derives pod IPs), `objects` builds the Kubernetes objects (shared with the fake Kubernetes
//! API in `peers`), `selector` filters them; `streams` gathers the log streams Loki would hold
//! (node journals included); `promql`, `logql`, `traceql` (with `matchers`) read just enough of
//! each query language; `args` reads tool arguments.

mod args;
mod evaluate;
mod grafana;
mod kubernetes;
mod logql;
mod matchers;
pub mod objects;
pub mod pod_ips;
mod prometheus;
pub mod promql;
pub(crate) mod selector;
mod streams;
#[cfg(test)]
mod tests;
mod traceql;
pub mod world;

pub use grafana::{query_loki_logs, search_tempo_traces};
pub use kubernetes::{
    events_list, namespaces_list, pods_get, pods_list, pods_list_in_namespace, pods_log,
    resources_get, resources_list, to_yaml,
};
pub(crate) use kubernetes::{initializing, log_container, log_text};
pub use prometheus::{execute_query, execute_range_query};

/// A tool's answer, or its error message.
pub type Rendered = Result<String, String>;
