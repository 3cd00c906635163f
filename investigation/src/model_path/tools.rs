//! The tools the model may call: the same read-only capabilities the evidence plan uses, each
//! with small typed arguments (their JSON schema generated and made strict), offered only when
//! a configured server serves the capability. A call is turned into a [`CapabilityRequest`]
//! and goes through the same tool layer (allowlist, cache, audit, redaction, size caps).

use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use firstline_llm::ToolSpec;

use crate::evidence::Capability;
use crate::tools::CapabilityRequest;

use super::schema::{MAX_ITEMS, MAX_STRING};

/// Longest look-back a metric query may ask for.
const MAX_METRIC_HOURS: u32 = 48;
/// Lines of a log query.
const LOG_LINES: u32 = 200;
/// Traces per search.
const TRACES: u32 = 20;
/// The kinds the model may read: what the evidence plan itself walks. Never a Secret (its values
/// are base64, which no redaction rule recognises) or anything else outside this list.
const READABLE_KINDS: &[&str] = &[
    "Pod",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
    "Service",
    "Endpoints",
    "Node",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "HorizontalPodAutoscaler",
    "ResourceQuota",
    "LimitRange",
    "PodDisruptionBudget",
    "Ingress",
    "Event",
    "Namespace",
    "ConfigMap",
];

/// `kind` as the API names it, if the model may read it.
fn readable(kind: &str) -> Result<String, String> {
    READABLE_KINDS
        .iter()
        .find(|k| {
            k.eq_ignore_ascii_case(kind.trim()) || format!("{k}s").eq_ignore_ascii_case(kind.trim())
        })
        .map(|k| k.to_string())
        .ok_or_else(|| {
            format!(
                "kind `{kind}` is not readable here; readable kinds: {}",
                READABLE_KINDS.join(", ")
            )
        })
}

#[derive(Deserialize, JsonSchema)]
struct DescribePod {
    namespace: String,
    pod: String,
}

#[derive(Deserialize, JsonSchema)]
struct GetObject {
    /// Null for cluster-scoped kinds (Node, StorageClass, PersistentVolume).
    namespace: Option<String>,
    /// Kubernetes kind, e.g. Deployment, Job, Node, PersistentVolumeClaim.
    kind: String,
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct ListObjects {
    namespace: Option<String>,
    kind: String,
    /// e.g. `app=checkout`; null for all.
    label_selector: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct ListPods {
    namespace: String,
    label_selector: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct PodLogs {
    namespace: String,
    pod: String,
    /// Null for the pod's only or default container.
    container: Option<String>,
    /// The previous (crashed) container's log instead of the current one.
    previous: bool,
}

#[derive(Deserialize, JsonSchema)]
struct Events {
    namespace: String,
    /// An involved object's name, or null for the whole namespace.
    object: Option<String>,
    warnings_only: bool,
}

#[derive(Deserialize, JsonSchema)]
struct RolloutHistory {
    namespace: String,
    deployment: String,
}

#[derive(Deserialize, JsonSchema)]
struct QueryMetrics {
    /// PromQL.
    query: String,
    /// How far before the alert the range starts, in hours (1 to 48).
    hours_before: u32,
}

#[derive(Deserialize, JsonSchema)]
struct QueryLogs {
    /// LogQL, e.g. `{namespace="shop", app="checkout"} |= "error"`.
    query: String,
}

#[derive(Deserialize, JsonSchema)]
struct SearchTraces {
    service: String,
}

/// What the model's tool calls are resolved against: the alert's time and the log tail.
#[derive(Debug, Clone, Copy)]
pub struct ToolWindow {
    /// The alert's start (or when it was posted).
    pub anchor: DateTime<Utc>,
    /// Container log lines asked for.
    pub tail_lines: u32,
}

/// One model tool: its name, what it reads, and how a call becomes a request.
struct ModelTool {
    name: &'static str,
    description: &'static str,
    capabilities: &'static [Capability],
    parameters: fn() -> Option<serde_json::Value>,
    request: fn(&str, &ToolWindow) -> Result<CapabilityRequest, String>,
}

fn schema<T: JsonSchema>() -> Option<serde_json::Value> {
    firstline_llm::strict_schema::<T>()
        .ok()
        .map(|s| firstline_llm::bounded(s, MAX_STRING, MAX_ITEMS))
}

fn args<T: DeserializeOwned>(arguments: &str) -> Result<T, String> {
    serde_json::from_str(arguments).map_err(|e| format!("arguments do not parse: {e}"))
}

fn window(window: &ToolWindow, before: Duration) -> (DateTime<Utc>, DateTime<Utc>) {
    (
        window.anchor - before,
        window.anchor + Duration::minutes(15),
    )
}

const TOOLS: &[ModelTool] = &[
    ModelTool {
        name: "describe_pod",
        description: "A pod's spec and status: containers, states, restarts, probes, node, events.",
        capabilities: &[Capability::PodDescribe],
        parameters: schema::<DescribePod>,
        request: |a, _| {
            let a: DescribePod = args(a)?;
            Ok(CapabilityRequest::PodDescribe {
                namespace: a.namespace,
                pod: a.pod,
            })
        },
    },
    ModelTool {
        name: "get_object",
        description: "One Kubernetes object by kind and name (Deployment, Job, Service, Node, PVC, …).",
        capabilities: &[Capability::ObjectGet],
        parameters: schema::<GetObject>,
        request: |a, _| {
            let a: GetObject = args(a)?;
            Ok(CapabilityRequest::ObjectGet {
                namespace: a.namespace,
                kind: readable(&a.kind)?,
                name: a.name,
            })
        },
    },
    ModelTool {
        name: "list_objects",
        description: "Kubernetes objects of one kind, optionally by label selector.",
        capabilities: &[Capability::ObjectList],
        parameters: schema::<ListObjects>,
        request: |a, _| {
            let a: ListObjects = args(a)?;
            Ok(CapabilityRequest::ObjectList {
                namespace: a.namespace,
                kind: readable(&a.kind)?,
                label_selector: a.label_selector,
            })
        },
    },
    ModelTool {
        name: "list_pods",
        description: "The pods of a namespace, optionally by label selector.",
        capabilities: &[Capability::PodList],
        parameters: schema::<ListPods>,
        request: |a, _| {
            let a: ListPods = args(a)?;
            Ok(CapabilityRequest::PodList {
                namespace: a.namespace,
                label_selector: a.label_selector,
            })
        },
    },
    ModelTool {
        name: "pod_logs",
        description: "The end of a container's log, current or previous (crashed) instance.",
        capabilities: &[Capability::PodLogsCurrent, Capability::PodLogsPrevious],
        parameters: schema::<PodLogs>,
        request: |a, w| {
            let a: PodLogs = args(a)?;
            Ok(CapabilityRequest::PodLogs {
                namespace: a.namespace,
                pod: a.pod,
                container: a.container,
                previous: a.previous,
                tail_lines: w.tail_lines,
            })
        },
    },
    ModelTool {
        name: "events",
        description: "Kubernetes events of a namespace, or of one object in it.",
        capabilities: &[Capability::Events],
        parameters: schema::<Events>,
        request: |a, _| {
            let a: Events = args(a)?;
            Ok(CapabilityRequest::Events {
                namespace: a.namespace,
                object: a.object,
                warnings_only: a.warnings_only,
            })
        },
    },
    ModelTool {
        name: "rollout_history",
        description: "A Deployment's rollout history (revisions and when they were made).",
        capabilities: &[Capability::DeployHistory],
        parameters: schema::<RolloutHistory>,
        request: |a, _| {
            let a: RolloutHistory = args(a)?;
            Ok(CapabilityRequest::DeployHistory {
                namespace: a.namespace,
                workload: a.deployment,
            })
        },
    },
    ModelTool {
        name: "query_metrics",
        description: "A Prometheus range query ending 15 minutes after the alert.",
        capabilities: &[Capability::MetricRange],
        parameters: schema::<QueryMetrics>,
        request: |a, w| {
            let a: QueryMetrics = args(a)?;
            let hours = a.hours_before.clamp(1, MAX_METRIC_HOURS);
            let (start, end) = window(w, Duration::hours(i64::from(hours)));
            // About 200 points whatever the range.
            let step_secs = (hours * 3600 / 200).max(15);
            Ok(CapabilityRequest::MetricRange {
                query: a.query,
                start,
                end,
                step_secs,
            })
        },
    },
    ModelTool {
        name: "query_logs",
        description: "A Loki LogQL query over the 30 minutes before the alert to 15 after.",
        capabilities: &[Capability::LogQuery],
        parameters: schema::<QueryLogs>,
        request: |a, w| {
            let a: QueryLogs = args(a)?;
            let (start, end) = window(w, Duration::minutes(30));
            Ok(CapabilityRequest::LogQuery {
                query: a.query,
                start,
                end,
                limit: LOG_LINES,
            })
        },
    },
    ModelTool {
        name: "search_traces",
        description: "Tempo traces of a service around the alert, slowest and failed first.",
        capabilities: &[Capability::TraceSearch],
        parameters: schema::<SearchTraces>,
        request: |a, w| {
            let a: SearchTraces = args(a)?;
            let (start, end) = window(w, Duration::minutes(30));
            Ok(CapabilityRequest::TraceSearch {
                service: a.service,
                start,
                end,
                limit: TRACES,
            })
        },
    },
];

/// The tools to offer: those whose capability a configured server serves.
pub fn offered(supports: impl Fn(&Capability) -> bool) -> Vec<ToolSpec> {
    TOOLS
        .iter()
        .filter(|t| t.capabilities.iter().any(&supports))
        .filter_map(|t| {
            Some(ToolSpec {
                name: t.name.to_string(),
                description: t.description.to_string(),
                parameters: (t.parameters)()?,
            })
        })
        .collect()
}

/// The request a call of `name` with `arguments` makes, or why it is refused. Only tools in
/// `offered` are callable: a name the model invents, or one not offered this step, is refused.
pub fn request(
    offered: &[ToolSpec],
    name: &str,
    arguments: &str,
    window: &ToolWindow,
) -> Result<CapabilityRequest, String> {
    if !offered.iter().any(|t| t.name == name) {
        return Err(format!("`{name}` is not a tool you were offered"));
    }
    let tool = TOOLS
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("`{name}` is not a tool you were offered"))?;
    (tool.request)(arguments, window)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window() -> ToolWindow {
        ToolWindow {
            anchor: "2025-03-04T14:02:00Z".parse().expect("time"),
            tail_lines: 300,
        }
    }

    #[test]
    fn only_served_capabilities_are_offered_and_every_schema_is_strict() {
        let tools = offered(|c| matches!(c, Capability::PodDescribe | Capability::PodLogsPrevious));
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["describe_pod", "pod_logs"]);
        for tool in offered(|_| true) {
            assert_eq!(
                tool.parameters["additionalProperties"], false,
                "{}",
                tool.name
            );
        }
    }

    #[test]
    fn a_tool_not_offered_or_bad_arguments_are_refused() {
        let tools = offered(|c| matches!(c, Capability::PodDescribe));
        let refused = request(&tools, "delete_pod", "{}", &window()).expect_err("refused");
        assert!(refused.contains("not a tool you were offered"));
        let refused = request(&tools, "pod_logs", "{}", &window()).expect_err("not offered");
        assert!(refused.contains("not a tool you were offered"));
        let bad = request(&tools, "describe_pod", "{\"pod\": 3}", &window()).expect_err("bad");
        assert!(bad.contains("do not parse"), "{bad}");
        let ok = request(
            &tools,
            "describe_pod",
            "{\"namespace\": \"shop\", \"pod\": \"web-1\"}",
            &window(),
        )
        .expect("request");
        assert_eq!(
            ok,
            CapabilityRequest::PodDescribe {
                namespace: "shop".into(),
                pod: "web-1".into()
            }
        );
    }

    #[test]
    fn secrets_and_unknown_kinds_are_refused() {
        let tools = offered(|_| true);
        for kind in ["Secret", "secrets", "ServiceAccount", "ClusterRole"] {
            let refused = request(
                &tools,
                "get_object",
                &format!("{{\"namespace\": \"shop\", \"kind\": \"{kind}\", \"name\": \"db\"}}"),
                &window(),
            )
            .expect_err("refused");
            assert!(refused.contains("not readable here"), "{kind}: {refused}");
        }
        let listed = request(
            &tools,
            "list_objects",
            "{\"namespace\": \"shop\", \"kind\": \"deployments\", \"label_selector\": null}",
            &window(),
        )
        .expect("deployments are readable");
        assert!(
            matches!(listed, CapabilityRequest::ObjectList { kind, .. } if kind == "Deployment")
        );
    }

    #[test]
    fn a_metric_window_is_clamped_to_two_days() {
        let tools = offered(|_| true);
        let req = request(
            &tools,
            "query_metrics",
            "{\"query\": \"up\", \"hours_before\": 1000}",
            &window(),
        )
        .expect("request");
        let CapabilityRequest::MetricRange { start, end, .. } = req else {
            panic!("a metric range")
        };
        assert_eq!(end - start, Duration::hours(48) + Duration::minutes(15));
    }
}
