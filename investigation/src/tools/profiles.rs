//! Built-in profiles: which tool of a well-known MCP server answers each capability, and with
//! which arguments. An operator selects one per server (`mcp.servers[].profile`) instead of
//! writing bindings by hand.
//!
//! Tool names and argument shapes were checked against the real servers' `tools/list` over stdio
//! (npm `kubernetes-mcp-server` 0.0.67, PyPI `prometheus-mcp-server` 1.6.2, PyPI `mcp-grafana`
//! 2.1.1). The `lab` profile binds every capability to the lab server, which serves the same tool
//! names and argument shapes, so one configuration works against the lab and the real servers.

use serde_json::{Value, json};

/// One capability bound to one tool of the profile's server.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileBinding {
    /// Capability key (`pod_describe`, …; see `firstline_config::MCP_CAPABILITIES`).
    pub capability: &'static str,
    /// Tool name on the server.
    pub tool: &'static str,
    /// Argument template (see [`super::template`]).
    pub args: Value,
}

/// The names of all built-in profiles.
pub const NAMES: &[&str] = &[
    "kubernetes-mcp-server",
    "prometheus-mcp-server",
    "mcp-grafana",
    "lab",
];

/// The bindings of a profile, or `None` for an unknown name.
pub fn profile(name: &str) -> Option<Vec<ProfileBinding>> {
    match name {
        "kubernetes-mcp-server" => Some(kubernetes()),
        "prometheus-mcp-server" => Some(prometheus()),
        "mcp-grafana" => Some(grafana(
            "{var.loki_datasource_uid}",
            "{var.tempo_datasource_uid}",
        )),
        "lab" => {
            let mut all = kubernetes();
            all.extend(prometheus());
            // The lab ignores the datasource; the real server requires one.
            all.extend(grafana("lab", "lab"));
            Some(all)
        }
        _ => None,
    }
}

/// The tools a profile calls: the default allowlist of a server that names this profile.
pub fn tools(name: &str) -> Vec<&'static str> {
    let mut tools: Vec<&'static str> = profile(name)
        .unwrap_or_default()
        .iter()
        .map(|b| b.tool)
        .collect();
    tools.sort_unstable();
    tools.dedup();
    tools
}

fn binding(capability: &'static str, tool: &'static str, args: Value) -> ProfileBinding {
    ProfileBinding {
        capability,
        tool,
        args,
    }
}

/// kubernetes-mcp-server (run with `--read-only --list-output yaml`). `pods_get` returns the
/// Pod as YAML, `resources_get` {apiVersion, kind, namespace, name} any object (a Job) as YAML,
/// `pods_list_in_namespace` {namespace, labelSelector} the matching Pods, `pods_log` plain text (`tail` defaults to 100 there), `events_list` YAML, and
/// `resources_list` the namespace's ReplicaSets (a Deployment's revision history).
fn kubernetes() -> Vec<ProfileBinding> {
    let logs = json!({
        "namespace": "{namespace}",
        "name": "{pod}",
        "container": "{container}",
        "previous": "{previous}",
        "tail": "{tail_lines}",
    });
    vec![
        binding(
            "pod_describe",
            "pods_get",
            json!({"namespace": "{namespace}", "name": "{pod}"}),
        ),
        binding(
            "object_get",
            "resources_get",
            json!({
                "apiVersion": "{api_version}",
                "kind": "{kind}",
                "namespace": "{namespace}",
                "name": "{name}",
            }),
        ),
        binding(
            "object_list",
            "resources_list",
            json!({
                "apiVersion": "{api_version}",
                "kind": "{kind}",
                "namespace": "{namespace}",
                "labelSelector": "{label_selector}",
            }),
        ),
        binding(
            "pod_list",
            "pods_list_in_namespace",
            json!({"namespace": "{namespace}", "labelSelector": "{label_selector}"}),
        ),
        binding("pod_logs_current", "pods_log", logs.clone()),
        binding("pod_logs_previous", "pods_log", logs),
        binding(
            "events",
            "events_list",
            json!({"namespace": "{namespace}", "fieldSelector": "{event_selector}"}),
        ),
        binding(
            "deploy_history",
            "resources_list",
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "{namespace}"}),
        ),
    ]
}

/// prometheus-mcp-server: `execute_range_query` {query, start, end, step} (all strings; `step`
/// like `60s`), answering `{"resultType":"matrix","result":[…]}` as JSON text.
fn prometheus() -> Vec<ProfileBinding> {
    vec![binding(
        "metric_range",
        "execute_range_query",
        json!({"query": "{query}", "start": "{start}", "end": "{end}", "step": "{step}"}),
    )]
}

/// mcp-grafana's Loki and Tempo tools. The datasource uids come from the server's `vars`
/// (`loki_datasource_uid`, `tempo_datasource_uid`). Prometheus through Grafana
/// (`query_prometheus`) is not bound here: bind `metric_range` in `mcp.capabilities` to use it.
fn grafana(loki_uid: &str, tempo_uid: &str) -> Vec<ProfileBinding> {
    vec![
        binding(
            "log_query",
            "query_loki_logs",
            json!({
                "datasourceUid": loki_uid,
                "logql": "{query}",
                "startRfc3339": "{start}",
                "endRfc3339": "{end}",
                "limit": "{limit}",
            }),
        ),
        binding(
            "trace_search",
            "search_tempo_traces",
            json!({
                "datasourceUid": tempo_uid,
                "query": "{{ resource.service.name = \"{service}\" }}",
                "start": "{start}",
                "end": "{end}",
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_match_the_settings_validation_list() {
        assert_eq!(NAMES, firstline_config::MCP_PROFILES);
        for name in NAMES {
            assert!(profile(name).is_some_and(|p| !p.is_empty()), "{name}");
        }
        assert!(profile("nope").is_none());
    }

    #[test]
    fn every_binding_names_a_known_capability_and_a_valid_template() {
        let vars = std::collections::BTreeMap::from([
            ("loki_datasource_uid".to_string(), "l".to_string()),
            ("tempo_datasource_uid".to_string(), "t".to_string()),
        ]);
        for name in NAMES {
            for b in profile(name).unwrap() {
                assert!(
                    firstline_config::MCP_CAPABILITIES.contains(&b.capability),
                    "{name}: {}",
                    b.capability
                );
                let template = serde_json::from_value(b.args.clone()).unwrap();
                super::super::template::check(&template, &vars)
                    .unwrap_or_else(|e| panic!("{name}/{}: {e}", b.tool));
            }
        }
    }

    #[test]
    fn object_capabilities_map_onto_resources_get_list_and_pods_list_in_namespace() {
        use super::super::CapabilityRequest;
        use super::super::template::{render, request_fields};
        let bindings = profile("kubernetes-mcp-server").unwrap();
        let args = |capability: &str, request: &CapabilityRequest| {
            let b = bindings
                .iter()
                .find(|b| b.capability == capability)
                .unwrap();
            let template = serde_json::from_value(b.args.clone()).unwrap();
            let args = render(&template, &request_fields(request), &Default::default());
            (b.tool, Value::Object(args))
        };
        let job = CapabilityRequest::ObjectGet {
            namespace: Some("batch".into()),
            kind: "Job".into(),
            name: "backup".into(),
        };
        assert_eq!(job.capability(), crate::evidence::Capability::ObjectGet);
        assert_eq!(
            args("object_get", &job),
            (
                "resources_get",
                json!({"apiVersion": "batch/v1", "kind": "Job", "namespace": "batch", "name": "backup"})
            )
        );
        let deployment = CapabilityRequest::ObjectGet {
            namespace: Some("web".into()),
            kind: "Deployment".into(),
            name: "api".into(),
        };
        assert_eq!(args("object_get", &deployment).1["apiVersion"], "apps/v1");
        // A cluster-scoped kind goes without a namespace.
        let node = CapabilityRequest::ObjectGet {
            namespace: None,
            kind: "Node".into(),
            name: "ip-10-0-1-7".into(),
        };
        assert_eq!(
            args("object_get", &node).1,
            json!({"apiVersion": "v1", "kind": "Node", "name": "ip-10-0-1-7"})
        );
        let claims = CapabilityRequest::ObjectList {
            namespace: Some("db".into()),
            kind: "PersistentVolumeClaim".into(),
            label_selector: Some("app=postgres".into()),
        };
        assert_eq!(
            args("object_list", &claims),
            (
                "resources_list",
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "db", "labelSelector": "app=postgres"})
            )
        );
        let list = CapabilityRequest::PodList {
            namespace: "batch".into(),
            label_selector: Some("job-name=backup".into()),
        };
        assert_eq!(list.capability(), crate::evidence::Capability::PodList);
        assert_eq!(
            args("pod_list", &list),
            (
                "pods_list_in_namespace",
                json!({"namespace": "batch", "labelSelector": "job-name=backup"})
            )
        );
        let all = CapabilityRequest::PodList {
            namespace: "batch".into(),
            label_selector: None,
        };
        assert_eq!(args("pod_list", &all).1, json!({"namespace": "batch"}));
        // The lab serves all of them under the same names.
        let lab = profile("lab").unwrap();
        for (capability, tool) in [
            ("object_get", "resources_get"),
            ("object_list", "resources_list"),
            ("pod_list", "pods_list_in_namespace"),
        ] {
            assert!(
                lab.iter()
                    .any(|b| b.capability == capability && b.tool == tool)
            );
        }
    }

    #[test]
    fn the_lab_profile_uses_the_real_servers_tool_names() {
        let lab = tools("lab");
        for real in [
            "kubernetes-mcp-server",
            "prometheus-mcp-server",
            "mcp-grafana",
        ] {
            for tool in tools(real) {
                assert!(lab.contains(&tool), "{real}: {tool}");
            }
        }
        assert_eq!(
            tools("kubernetes-mcp-server"),
            [
                "events_list",
                "pods_get",
                "pods_list_in_namespace",
                "pods_log",
                "resources_get",
                "resources_list"
            ]
        );
    }
}
