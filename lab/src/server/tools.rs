//! The tools the lab serves, with the real servers' names, descriptions and input schemas
//! (properties and `required`): kubernetes-mcp-server's read tools, prometheus-mcp-server's and
//! mcp-grafana's on every endpoint, and kubernetes-mcp-server 0.0.67's write tools
//! (`resources_create_or_update`, `resources_scale`, `pods_delete`, as listed by the server run
//! without `--read-only`) on the write endpoint only.

use serde_json::{Map, Value, json};

use crate::render;
use crate::scenario::Scenario;
use crate::write::WriteTool;

pub(super) type Handler = fn(&Scenario, &Map<String, Value>) -> render::Rendered;

pub(super) struct Served {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: fn() -> Value,
    pub handler: Handler,
}

/// The tools the lab serves, with the real servers' input schemas (properties and `required`).
pub(super) fn served() -> Vec<Served> {
    vec![
        Served {
            name: "pods_get",
            description: "Get a Kubernetes Pod in the current or provided namespace with the provided name",
            schema: || {
                object(
                    json!({"name": str_prop("Name of the Pod"), "namespace": str_prop("Namespace to get the Pod from")}),
                    &["name"],
                )
            },
            handler: render::pods_get,
        },
        Served {
            name: "pods_list_in_namespace",
            description: "List all the Kubernetes pods in the specified namespace in the current cluster",
            schema: || {
                object(
                    json!({
                        "namespace": str_prop("Namespace to list pods from"),
                        "labelSelector": str_prop("Optional Kubernetes label selector (e.g. 'app=myapp,env=prod' or 'app in (myapp,yourapp)'), use this option when you want to filter the pods by label"),
                        "fieldSelector": str_prop("Optional Kubernetes field selector to filter pods by field values"),
                    }),
                    &["namespace"],
                )
            },
            handler: render::pods_list_in_namespace,
        },
        Served {
            name: "pods_list",
            description: "List all the Kubernetes pods in the current cluster from all namespaces",
            schema: || {
                object(
                    json!({
                        "labelSelector": str_prop("Optional Kubernetes label selector (e.g. 'app=myapp,env=prod' or 'app in (myapp,yourapp)'), use this option when you want to filter the pods by label"),
                        "fieldSelector": str_prop("Optional Kubernetes field selector to filter pods by field values"),
                    }),
                    &[],
                )
            },
            handler: render::pods_list,
        },
        Served {
            name: "pods_log",
            description: "Get the logs of a Kubernetes Pod in the current or provided namespace with the provided name",
            schema: || {
                object(
                    json!({
                        "name": str_prop("Name of the Pod to get the logs from"),
                        "namespace": str_prop("Namespace to get the Pod logs from"),
                        "container": str_prop("Name of the Pod container to get the logs from (Optional)"),
                        "previous": {"type": "boolean", "description": "Return previous terminated container logs (Optional)"},
                        "tail": {"type": "integer", "default": 100, "minimum": 0, "description": "Number of lines to retrieve from the end of the logs (Optional, default: 100)"},
                    }),
                    &["name"],
                )
            },
            handler: render::pods_log,
        },
        Served {
            name: "events_list",
            description: "List all the Kubernetes events in the current cluster from all namespaces",
            schema: || {
                object(
                    json!({"namespace": str_prop("Optional Namespace to retrieve the events from"), "fieldSelector": str_prop("Optional Kubernetes field selector to filter events")}),
                    &[],
                )
            },
            handler: render::events_list,
        },
        Served {
            name: "resources_list",
            description: "List Kubernetes resources and objects in the current cluster by providing their apiVersion and kind",
            schema: || {
                object(
                    json!({
                        "apiVersion": str_prop("apiVersion of the resources"), "kind": str_prop("kind of the resources"),
                        "namespace": str_prop("Optional Namespace"), "labelSelector": str_prop("Optional label selector"),
                        "fieldSelector": str_prop("Optional field selector"),
                    }),
                    &["apiVersion", "kind"],
                )
            },
            handler: render::resources_list,
        },
        Served {
            name: "resources_get",
            description: "Get a Kubernetes resource in the current cluster by providing its apiVersion, kind, optionally the namespace, and its name",
            schema: || {
                object(
                    json!({
                        "apiVersion": str_prop("apiVersion of the resource"), "kind": str_prop("kind of the resource"),
                        "namespace": str_prop("Optional Namespace"), "name": str_prop("Name of the resource"),
                    }),
                    &["apiVersion", "kind", "name"],
                )
            },
            handler: render::resources_get,
        },
        Served {
            name: "namespaces_list",
            description: "List all the Kubernetes namespaces in the current cluster",
            schema: || object(json!({}), &[]),
            handler: render::namespaces_list,
        },
        Served {
            name: "execute_query",
            description: "Execute a PromQL instant query against Prometheus",
            schema: || {
                object(
                    json!({
                        "query": str_prop("PromQL query string"),
                        "time": str_prop("Optional RFC3339 or Unix timestamp (default: current time)"),
                    }),
                    &["query"],
                )
            },
            handler: render::execute_query,
        },
        Served {
            name: "execute_range_query",
            description: "Execute a PromQL range query with start time, end time, and step interval",
            schema: || {
                object(
                    json!({
                        "query": str_prop("PromQL query string"), "start": str_prop("Start time as RFC3339 or Unix timestamp"),
                        "end": str_prop("End time as RFC3339 or Unix timestamp"), "step": str_prop("Query resolution step width (e.g., '15s', '1m', '1h')"),
                    }),
                    &["query", "start", "end", "step"],
                )
            },
            handler: render::execute_range_query,
        },
        Served {
            name: "query_loki_logs",
            description: "Executes a LogQL query against a Loki datasource to retrieve log entries",
            schema: || {
                object(
                    json!({
                        "datasourceUid": str_prop("The UID of the datasource to query"), "logql": str_prop("The LogQL query to execute against Loki"),
                        "startRfc3339": str_prop("Optionally, the start time of the query in RFC3339 format"),
                        "endRfc3339": str_prop("Optionally, the end time of the query in RFC3339 format"),
                        "limit": {"type": "integer", "default": 10, "description": "Optionally, the maximum number of log lines to return"},
                        "direction": str_prop("Optionally, 'forward' (oldest first) or 'backward' (newest first, default)"),
                    }),
                    &["datasourceUid", "logql"],
                )
            },
            handler: render::query_loki_logs,
        },
        Served {
            name: "search_tempo_traces",
            description: "Search for traces in a Tempo datasource using a TraceQL query",
            schema: || {
                object(
                    json!({
                        "datasourceUid": str_prop("UID of the tempo datasource to query"), "query": str_prop("TraceQL query string"),
                        "start": str_prop("Start time for the search (RFC3339 format)"), "end": str_prop("End time for the search (RFC3339 format)"),
                        "limit": {"type": "integer", "description": "Optionally, the maximum number of traces to return"},
                    }),
                    &["datasourceUid", "query"],
                )
            },
            handler: render::search_tempo_traces,
        },
    ]
}

fn str_prop(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

pub(super) fn object(properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// The names of the read tools the lab serves from a scenario's world (on every endpoint).
pub fn served_tool_names() -> Vec<&'static str> {
    served().iter().map(|s| s.name).collect()
}

/// A write tool as kubernetes-mcp-server 0.0.67 lists it.
pub(super) struct WriteServed {
    pub tool: WriteTool,
    pub description: &'static str,
    pub schema: fn() -> Value,
}

/// The write tools, with kubernetes-mcp-server 0.0.67's descriptions and input schemas.
pub(super) fn write_served() -> Vec<WriteServed> {
    vec![
        WriteServed {
            tool: WriteTool::CreateOrUpdate,
            description: "Create or update a Kubernetes resource via Server-Side Apply. The manifest is the complete desired state: any field this tool previously set and the new manifest omits is removed. To edit an existing resource, fetch it with resources_get, modify it, then re-apply the full resource.\n(common apiVersion and kind include: v1 Pod, v1 Service, v1 Node, apps/v1 Deployment, networking.k8s.io/v1 Ingress, route.openshift.io/v1 Route)",
            schema: || {
                object(
                    json!({"resource": str_prop("Complete YAML or JSON representation of the Kubernetes resource (full desired state, not a partial patch). Include apiVersion, kind, metadata, and the full spec.")}),
                    &["resource"],
                )
            },
        },
        WriteServed {
            tool: WriteTool::Scale,
            description: "Get or update the scale of a Kubernetes resource in the current cluster by providing its apiVersion, kind, name, and optionally the namespace. If the scale is set in the tool call, the scale will be updated to that value. Always returns the current scale of the resource",
            schema: || {
                object(
                    json!({
                        "apiVersion": str_prop("apiVersion of the resource (examples of valid apiVersion are apps/v1)"),
                        "kind": str_prop("kind of the resource (examples of valid kind are: StatefulSet, Deployment)"),
                        "name": str_prop("Name of the resource"),
                        "namespace": str_prop("Optional Namespace to get/update the namespaced resource scale from (ignored in case of cluster scoped resources). If not provided, will get/update resource scale from configured namespace"),
                        "scale": {"type": "integer", "description": "Optional scale to update the resources scale to. If not provided, will return the current scale of the resource, and not update it"},
                    }),
                    &["apiVersion", "kind", "name"],
                )
            },
        },
        WriteServed {
            tool: WriteTool::PodsDelete,
            description: "Delete a Kubernetes Pod in the current or provided namespace with the provided name",
            schema: || {
                object(
                    json!({"name": str_prop("Name of the Pod to delete"), "namespace": str_prop("Namespace to delete the Pod from")}),
                    &["name"],
                )
            },
        },
    ]
}
