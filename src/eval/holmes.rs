//! The HolmesGPT adapter: one of their investigation fixtures as a lab scenario.
//!
//! - `investigate_request.json` becomes the alert: the target comes from the holmes alert adapter
//!   (`firstline_alert::holmes`), the text from the request's title, description
//!   and subject, the way an integration would post it.
//! - Each recorded `*.txt` tool call is read for *what it is* — an object, a list of objects, a
//!   container's log, events, resource usage, a PromQL, LogQL or TraceQL query — whichever of
//!   HolmesGPT's tools recorded it (their `kubectl_*` tools, `fetch_pod_logs`, a `kubectl …` line
//!   run by their bash tool), and becomes lab `raw_tool_results` entries under the real servers'
//!   tool names, with the arguments Firstline's calls carry. Their `match_params` say which calls
//!   a recording answers in their runner; the entry's `args` say the same to the lab, whose
//!   entries match when their `args` are a subset of the call's: a parameter recorded as `*` (or
//!   not recorded) is left out, so it matches any value.
//! - `rubric.yaml` (ours, beside their files) holds the `expect` block.
//!
//! | what it is | HolmesGPT tools | served as |
//! |---|---|---|
//! | a pod | `kubectl_describe`, `kubectl_get_yaml`, `kubectl_get_by_name` (kind `pod`/`po`/`pods`) | `pods_get {namespace, name}` |
//! | any other object | the same, any other kind (`deploy`, `sts`, `svc`, `no`, `pvc`, `hpa` …) | `resources_get {apiVersion, kind, namespace, name}` (no namespace for Node, PV, StorageClass, Namespace) |
//! | the objects of a kind | `kubectl_get_by_kind_in_namespace`, `…_in_cluster`, `kubectl_find_resource`, `kubernetes_jq_query`, `kubernetes_count`, `kubernetes_tabular_query` | `pods_list_in_namespace {namespace}` / `pods_list` for pods, `events_list` for events, `namespaces_list`, else `resources_list {apiVersion, kind, namespace?, labelSelector?, fieldSelector?}` |
//! | a container's log | `kubectl_logs`, `kubectl_previous_logs`, `…_all_containers`, `kubectl_container_logs`, `kubectl_container_previous_logs`, `kubectl_logs_grep`, `…_all_containers_grep`, `fetch_pod_logs` (toolset `kubernetes/logs`) | `pods_log {namespace, name, container?, previous}` |
//! | events | `kubectl_events` | `events_list {namespace, fieldSelector: involvedObject.name=…}` |
//! | resource usage | `kubectl_top_pods`, `kubectl_top_nodes` | `pods_top` / `nodes_top` |
//! | an object's relatives | `kubectl_lineage_children`, `kubectl_lineage_parents` | `pods_get`/`resources_get` of the subject and of every object the tree names |
//! | PromQL | `execute_prometheus_range_query`, `execute_prometheus_instant_query` | `execute_range_query {query}` / `execute_query {query}` |
//! | Prometheus' metric names, metadata | `list_available_metrics`, `get_metric_names`, `get_metric_metadata` | `list_metrics {}`, `get_metric_metadata {metric}` |
//! | LogQL | `grafana_loki_query`, `fetch_loki_logs*`, `fetch_pod_logs` (toolset `grafana/loki`) | `query_loki_logs {logql}`: the query they sent (for a pod: `{namespace="…", pod="…"}`, their default labels) |
//! | TraceQL | `fetch_tempo_traces`, `tempo_search_traces_by_query`, `fetch_tempo_trace_by_id`, `tempo_query_trace_by_id` | `search_tempo_traces {query}`: `{ resource.service.name = "…" }` as Firstline asks for a service |
//! | a `kubectl describe/get/logs/events/top` line | `bash`, `run_bash_command` | as the tool it reads as |
//!
//! When several recordings answer the same call (`kubectl_logs` and `kubectl_logs_all_containers`
//! of one pod), one is served: a successful one over a failed one, then the one closer to the
//! real tool's answer (an object's YAML over `kubectl describe` over a table row; one container's
//! log over every container's over grep'ed lines), then the first by file name. More specific
//! entries come first, since the lab serves the first whose arguments match.
//!
//! A recording of a failed call is served as a tool error (missing evidence). Memory requests
//! (`kubectl_memory_requests_*`) and a lineage tree that names no object the lab knows are served
//! under their own tool name and parameters, for a future capability. Everything else (helm,
//! argocd, aws, datadog, newrelic, runbooks, Robusta findings, the internet …) is not served. The
//! case's notes name every recording the investigation will not be answered with, and why:
//! not served, served under a tool it does not call, or answering the same call as another.
//!
//! Their recordings are never edited: a miss is information.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use firstline_alert::holmes::from_investigate_request;
use firstline_investigation::AlertInput;
use firstline_investigation::tools::profiles;
use firstline_investigation::tools::template::api_version;
use firstline_lab::Scenario;
use firstline_lab::holmes_fixture::RecordedToolCall;
use firstline_lab::scenario::{Expect, RawToolResult};
use serde_json::{Value, json};

/// A HolmesGPT case, ready to serve.
pub struct HolmesCase {
    pub scenario: Scenario,
    pub alert: AlertInput,
    /// Recordings the investigation will not be answered with, each as `file (tool): why`.
    pub unmapped: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Rubric {
    expect: Expect,
}

/// Loads the case in `dir` with the alert firing at `now`.
pub fn load(name: &str, dir: &Path, now: DateTime<Utc>) -> anyhow::Result<HolmesCase> {
    let request_path = dir.join("investigate_request.json");
    let request = std::fs::read_to_string(&request_path)
        .with_context(|| format!("reading {}", request_path.display()))?;
    let target = from_investigate_request(&request)
        .with_context(|| format!("{}", request_path.display()))?;
    let request_json: Value =
        serde_json::from_str(&request).with_context(|| format!("{}", request_path.display()))?;
    let text = alert_text(&request_json);

    let rubric_path = dir.join("rubric.yaml");
    let rubric: Rubric = serde_norway::from_str(
        &std::fs::read_to_string(&rubric_path)
            .with_context(|| format!("reading {}", rubric_path.display()))?,
    )
    .with_context(|| format!("{}", rubric_path.display()))?;

    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    paths.sort();
    let mut recordings = Vec::new();
    let mut unreadable = Vec::new();
    for path in paths {
        let file = path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        // Someone else's case may ship other text files; one that is not a recording is noted,
        // not fatal.
        match RecordedToolCall::parse(&text) {
            Ok(call) => recordings.push((file, call)),
            Err(e) => unreadable.push(format!("{file}: not a recorded tool call ({e})")),
        }
    }
    let (raw, mut unmapped) = serve(&recordings, &profiles::tools("lab"));
    unmapped.extend(unreadable);

    let spec = json!({
        "description": format!("HolmesGPT fixture {name}"),
        "alert": {"text": text},
        "expect": serde_json::to_value(&rubric.expect)?,
        "raw_tool_results": serde_json::to_value(&raw)?,
    });
    let spec = serde_json::from_value(spec).context("building the lab scenario")?;
    let scenario = Scenario {
        name: name.to_string(),
        path: request_path,
        alert_at: now,
        spec,
    };
    let alert = AlertInput {
        text: scenario.alert_text(),
        target,
        posted_at: Some(now),
    };
    Ok(HolmesCase {
        scenario,
        alert,
        unmapped,
    })
}

/// The request as an integration would post it: title, description, subject.
fn alert_text(request: &Value) -> String {
    let field = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let mut lines = Vec::new();
    lines.push(field(request, "title").unwrap_or_else(|| "HolmesGPT investigation".into()));
    if let Some(description) = field(request, "description") {
        lines.push(description);
    }
    let subject = request.get("subject").cloned().unwrap_or(Value::Null);
    for key in ["name", "namespace", "container", "node", "cluster"] {
        if let Some(value) = field(&subject, key) {
            lines.push(format!("{key}={value}"));
        }
    }
    if let Some(kind) = field(&subject, "kind").or_else(|| field(&subject, "subject_type")) {
        lines.push(format!("kind={kind}"));
    }
    lines.join("\n")
}

/// A Kubernetes kind as kubectl resolves it.
#[derive(Debug, PartialEq, Eq)]
struct Kind {
    /// As the API names it (`Deployment`); also matched case-insensitively (`deployment`).
    name: &'static str,
    namespaced: bool,
    /// The plural and short names kubectl accepts.
    aliases: &'static [&'static str],
}

const fn kind_entry(
    name: &'static str,
    namespaced: bool,
    aliases: &'static [&'static str],
) -> Kind {
    Kind {
        name,
        namespaced,
        aliases,
    }
}

/// The built-in kinds a recording may name: those the lab's world serves, and other core kinds
/// a case may describe. Secrets are left out: the lab never serves them. Their apiVersion is
/// the one Firstline's calls carry ([`api_version`]), so that an entry matches them.
const KINDS: &[Kind] = &[
    kind_entry("Pod", true, &["pods", "po"]),
    kind_entry("Deployment", true, &["deployments", "deploy"]),
    kind_entry("StatefulSet", true, &["statefulsets", "sts"]),
    kind_entry("DaemonSet", true, &["daemonsets", "ds"]),
    kind_entry("ReplicaSet", true, &["replicasets", "rs"]),
    kind_entry("ControllerRevision", true, &["controllerrevisions"]),
    kind_entry("Job", true, &["jobs"]),
    kind_entry("CronJob", true, &["cronjobs", "cj"]),
    kind_entry("Service", true, &["services", "svc"]),
    kind_entry("Endpoints", true, &["ep"]),
    kind_entry("Ingress", true, &["ingresses", "ing"]),
    kind_entry("NetworkPolicy", true, &["networkpolicies", "netpol"]),
    kind_entry("ConfigMap", true, &["configmaps", "cm"]),
    kind_entry("ServiceAccount", true, &["serviceaccounts", "sa"]),
    kind_entry(
        "PersistentVolumeClaim",
        true,
        &["persistentvolumeclaims", "pvc"],
    ),
    kind_entry("PersistentVolume", false, &["persistentvolumes", "pv"]),
    kind_entry("StorageClass", false, &["storageclasses", "sc"]),
    kind_entry("VolumeAttachment", false, &["volumeattachments"]),
    kind_entry(
        "HorizontalPodAutoscaler",
        true,
        &["horizontalpodautoscalers", "hpa"],
    ),
    kind_entry(
        "PodDisruptionBudget",
        true,
        &["poddisruptionbudgets", "pdb"],
    ),
    kind_entry("ResourceQuota", true, &["resourcequotas", "quota"]),
    kind_entry("LimitRange", true, &["limitranges", "limits"]),
    kind_entry("Node", false, &["nodes", "no"]),
    kind_entry("Namespace", false, &["namespaces", "ns"]),
    kind_entry("Event", true, &["events", "ev"]),
];

/// The kind kubectl means by `word`: `pod`, `Pods`, `po`, `deployments.apps`, `ReplicaSet.apps`.
fn kind(word: &str) -> Option<&'static Kind> {
    let resource = word.trim().split(['.', '/']).next()?.to_ascii_lowercase();
    KINDS
        .iter()
        .find(|k| k.name.eq_ignore_ascii_case(&resource) || k.aliases.contains(&resource.as_str()))
}

/// What a recording is, whichever HolmesGPT tool recorded it.
#[derive(Debug, Clone, PartialEq)]
enum Intent {
    /// One object (`name: None`: any of that kind, their `*`).
    Object {
        kind: &'static Kind,
        namespace: Option<String>,
        name: Option<String>,
    },
    /// The objects of a kind, in one namespace or in all.
    List {
        kind: &'static Kind,
        namespace: Option<String>,
        label_selector: Option<String>,
        field_selector: Option<String>,
    },
    /// A pod's log; `None` is any pod, any container, or either instance.
    Logs {
        namespace: Option<String>,
        pod: Option<String>,
        container: Option<String>,
        previous: Option<bool>,
    },
    /// Events of a namespace (or of all), narrowed by a field selector.
    Events {
        namespace: Option<String>,
        field_selector: Option<String>,
    },
    /// `kubectl top pods` / `kubectl top nodes`.
    Top {
        nodes: bool,
        namespace: Option<String>,
        name: Option<String>,
    },
    /// A PromQL query, over a range or at an instant.
    Metric { query: String, range: bool },
    /// Prometheus' metric names.
    MetricNames,
    /// Prometheus' metadata of one metric.
    MetricMetadata { metric: String },
    /// A LogQL query.
    Logql(String),
    /// A TraceQL search.
    Traceql(String),
}

/// How close a recording's text is to what the real tool answers. When two recordings answer
/// the same call, the closer one is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fidelity {
    /// The same content: an object's YAML, one container's log.
    Same,
    /// Another view of it: `kubectl describe`, a table of objects, every container's log.
    View,
    /// A part or a digest of it: a table row, grep'ed lines, a jq projection, a lineage tree.
    Partial,
}

/// How a recording is served.
#[derive(Debug)]
enum Mapping {
    /// It answers the calls of these intents.
    Intents(Vec<(Intent, Fidelity)>),
    /// No real server's tool answers this: served under HolmesGPT's own tool name and parameters,
    /// for a future capability, and noted with this reason.
    AsRecorded(String),
    /// Not served, for this reason.
    Unmapped(String),
}

/// A recorded parameter; `*` and empty mean any value to their runner, so they are `None`.
fn param(params: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .filter_map(|k| params.get(*k))
        .find_map(|v| match v {
            Value::String(s) => Some(s.trim().to_string()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        })
        .filter(|s| !s.is_empty() && s != "*")
}

/// What `call` (recorded in `file`) is, and so how it is served.
fn classify(file: &str, call: &RecordedToolCall) -> Mapping {
    let p = &call.match_params;
    let tool = call.tool_name.as_str();
    match tool {
        "kubectl_get_yaml" => object(p, Fidelity::Same),
        "kubectl_describe" => object(p, Fidelity::View),
        "kubectl_get_by_name" => object(p, Fidelity::Partial),
        "kubectl_get_by_kind_in_namespace" => list(p, param(p, &["namespace"]), Fidelity::View),
        "kubectl_get_by_kind_in_cluster" => list(p, None, Fidelity::View),
        "kubectl_find_resource" => list(p, None, Fidelity::Partial),
        "kubernetes_jq_query" | "kubernetes_count" | "kubernetes_tabular_query" => {
            list(p, param(p, &["namespace"]), Fidelity::Partial)
        }
        "kubectl_events" => {
            let object = param(p, &["resource_name", "pod_name", "name"]);
            intent(
                Intent::Events {
                    namespace: param(p, &["namespace"]),
                    field_selector: object.map(|o| format!("involvedObject.name={o}")),
                },
                Fidelity::View,
            )
        }
        "fetch_pod_logs" => match call.toolset_name.as_str() {
            "" | "kubernetes/logs" => pod_logs(file, tool, p),
            "grafana/loki" => loki(p),
            other => Mapping::Unmapped(format!(
                "pod logs from `{other}`: the lab imitates no such log store"
            )),
        },
        t if is_kubectl_logs(t) => pod_logs(file, t, p),
        "kubectl_top_pods" => intent(
            Intent::Top {
                nodes: false,
                namespace: param(p, &["namespace"]),
                name: None,
            },
            Fidelity::Same,
        ),
        "kubectl_top_nodes" => intent(
            Intent::Top {
                nodes: true,
                namespace: None,
                name: None,
            },
            Fidelity::Same,
        ),
        "kubectl_memory_requests_all_namespaces" | "kubectl_memory_requests_namespace" => {
            Mapping::AsRecorded(
                "memory requests per pod are pod specs, not usage, and no real server's tool \
                 answers them alone (a pod list would answer the investigation's pod listing \
                 with a table that has no pod status)"
                    .into(),
            )
        }
        "kubectl_lineage_children" | "kubectl_lineage_parents" => lineage(call),
        "execute_prometheus_range_query" | "execute_prometheus_instant_query" => {
            match param(p, &["query"]) {
                Some(query) => intent(
                    Intent::Metric {
                        query,
                        range: tool == "execute_prometheus_range_query",
                    },
                    Fidelity::View,
                ),
                None => Mapping::Unmapped("no PromQL query recorded".into()),
            }
        }
        "list_available_metrics" | "get_metric_names" => {
            intent(Intent::MetricNames, Fidelity::View)
        }
        "get_metric_metadata" => match param(p, &["metric"]) {
            Some(metric) => intent(Intent::MetricMetadata { metric }, Fidelity::View),
            None => Mapping::Unmapped("no metric name recorded".into()),
        },
        t if t == "grafana_loki_query" || t.starts_with("fetch_loki_logs") => loki(p),
        "fetch_tempo_traces" => tempo_search(p),
        "tempo_search_traces_by_query" => match param(p, &["q", "query"]) {
            Some(query) => intent(Intent::Traceql(query), Fidelity::View),
            None => Mapping::Unmapped("no TraceQL query recorded".into()),
        },
        "fetch_tempo_trace_by_id" | "tempo_query_trace_by_id" => match param(p, &["trace_id"]) {
            Some(id) => intent(
                Intent::Traceql(format!("{{ trace:id = \"{id}\" }}")),
                Fidelity::View,
            ),
            None => Mapping::Unmapped("no trace id recorded".into()),
        },
        "bash" | "run_bash_command" => match param(p, &["command"]) {
            Some(command) => match kubectl_command(&command) {
                Ok((intent, fidelity)) => Mapping::Intents(vec![(intent, fidelity)]),
                Err(why) => Mapping::Unmapped(format!("`{command}`: {why}")),
            },
            None => Mapping::Unmapped("no command recorded".into()),
        },
        _ => Mapping::Unmapped(match call.toolset_name.as_str() {
            "" => "no counterpart on the servers the lab imitates".to_string(),
            toolset => format!(
                "toolset `{toolset}` has no counterpart on the servers the lab imitates \
                 (Kubernetes, Prometheus, Loki, Tempo)"
            ),
        }),
    }
}

fn intent(intent: Intent, fidelity: Fidelity) -> Mapping {
    Mapping::Intents(vec![(intent, fidelity)])
}

/// `kubectl_logs`, `kubectl_previous_logs_all_containers`, `kubectl_container_logs`,
/// `kubectl_logs_grep` …: HolmesGPT's `kubernetes/logs` tools.
fn is_kubectl_logs(tool: &str) -> bool {
    tool.starts_with("kubectl_") && tool.contains("logs")
}

/// One object by kind and name: describe, get, YAML.
fn object(p: &Value, fidelity: Fidelity) -> Mapping {
    let Some(word) = param(p, &["kind", "resource_type"]) else {
        return Mapping::Unmapped("no kind recorded".into());
    };
    let Some(kind) = kind(&word) else {
        return Mapping::Unmapped(format!("kind `{word}` is not one the lab serves"));
    };
    intent(
        Intent::Object {
            kind,
            namespace: param(p, &["namespace"]),
            name: param(p, &["name", "resource_name"]),
        },
        fidelity,
    )
}

/// The objects of a kind, in `namespace` or in all namespaces.
fn list(p: &Value, namespace: Option<String>, fidelity: Fidelity) -> Mapping {
    let Some(word) = param(p, &["kind"]) else {
        return Mapping::Unmapped("no kind recorded".into());
    };
    let Some(kind) = kind(&word) else {
        return Mapping::Unmapped(format!("kind `{word}` is not one the lab serves"));
    };
    intent(
        list_of(
            kind,
            namespace,
            param(p, &["label_selector"]),
            param(p, &["field_selector"]),
        ),
        fidelity,
    )
}

/// A list of `kind`; a list of events is an event query.
fn list_of(
    kind: &'static Kind,
    namespace: Option<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
) -> Intent {
    if kind.name == "Event" {
        Intent::Events {
            namespace,
            field_selector,
        }
    } else {
        Intent::List {
            kind,
            namespace,
            label_selector,
            field_selector,
        }
    }
}

/// A container's log from the cluster.
fn pod_logs(file: &str, tool: &str, p: &Value) -> Mapping {
    let previous = if tool == "fetch_pod_logs" {
        // It reads the previous and the current instance together, so it answers both — unless
        // the file says which (their fixtures kept the names of the `kubectl_*logs` tools they
        // recorded when the header became `fetch_pod_logs`: `kubectl_previous_logs.txt`).
        if file.contains("previous") {
            Some(true)
        } else if is_kubectl_logs(file) {
            Some(false)
        } else {
            None
        }
    } else {
        Some(tool.contains("previous"))
    };
    let filtered = tool.ends_with("_grep")
        || ["search_term", "filter", "exclude_filter"]
            .iter()
            .any(|k| param(p, &[k]).is_some());
    let fidelity = if filtered {
        Fidelity::Partial
    } else if tool.contains("all_containers") || tool == "fetch_pod_logs" {
        Fidelity::View
    } else {
        Fidelity::Same
    };
    intent(
        Intent::Logs {
            namespace: param(p, &["namespace"]),
            pod: param(p, &["pod_name", "pod", "name"]),
            container: param(p, &["container_name", "container"]),
            previous,
        },
        fidelity,
    )
}

/// A Loki query: the LogQL they sent, or the one their pod-log tool builds with its default
/// labels (`{namespace="…", pod="…"} |= "filter"`).
fn loki(p: &Value) -> Mapping {
    if let Some(query) = param(p, &["query", "logql"]) {
        return intent(Intent::Logql(query), Fidelity::View);
    }
    let mut matchers = Vec::new();
    if let Some(namespace) = param(p, &["namespace"]) {
        matchers.push(format!("namespace=\"{namespace}\""));
    }
    if let Some(pod) = param(p, &["pod_name", "pod"]) {
        matchers.push(format!("pod=\"{pod}\""));
    }
    if matchers.is_empty() {
        return Mapping::Unmapped("a Loki call with neither a LogQL query nor a pod".into());
    }
    let mut query = format!("{{{}}}", matchers.join(", "));
    if let Some(filter) = param(p, &["filter"]) {
        query.push_str(&format!(" |= \"{filter}\""));
    }
    intent(Intent::Logql(query), Fidelity::View)
}

/// `fetch_tempo_traces`: a service's traces are what Firstline's trace search asks for
/// (`{ resource.service.name = "…" }`); without a service, their other filters as TraceQL.
fn tempo_search(p: &Value) -> Mapping {
    if let Some(service) = param(p, &["service_name"]) {
        return intent(
            Intent::Traceql(format!("{{ resource.service.name = \"{service}\" }}")),
            Fidelity::View,
        );
    }
    let filters: Vec<String> = [
        ("pod_name", "k8s.pod.name"),
        ("namespace_name", "k8s.namespace.name"),
        ("deployment_name", "k8s.deployment.name"),
        ("node_name", "k8s.node.name"),
    ]
    .iter()
    .filter_map(|(key, attribute)| {
        param(p, &[key]).map(|value| format!("resource.{attribute} = \"{value}\""))
    })
    .collect();
    if filters.is_empty() {
        return Mapping::Unmapped("a trace search with no service, pod or workload".into());
    }
    intent(
        Intent::Traceql(format!("{{ {} }}", filters.join(" && "))),
        Fidelity::View,
    )
}

/// `kubectl lineage KIND NAME`: a tree of the subject's relatives, one `Kind/name` per row (with
/// the row's namespace first). It tells about the subject and every object it names.
fn lineage(call: &RecordedToolCall) -> Mapping {
    let p = &call.match_params;
    let namespace = param(p, &["namespace"]);
    let mut intents = Vec::new();
    let mut push = |intent: Intent| {
        if !intents.contains(&intent) {
            intents.push(intent);
        }
    };
    if let (Some(kind), Some(name)) = (
        param(p, &["kind"]).and_then(|k| kind(&k)),
        param(p, &["name"]),
    ) {
        push(Intent::Object {
            kind,
            namespace: namespace.clone(),
            name: Some(name),
        });
    }
    if !call.failed() {
        for line in call.output().lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some((at, (kind, name))) = words
                .iter()
                .enumerate()
                .find_map(|(i, w)| object_ref(w).map(|o| (i, o)))
            else {
                continue;
            };
            let row_namespace = words
                .first()
                .filter(|w| at > 0 && is_dns_label(w))
                .map(|w| w.to_string());
            push(Intent::Object {
                kind,
                namespace: row_namespace.or_else(|| namespace.clone()),
                name: Some(name),
            });
        }
    }
    if intents.is_empty() {
        Mapping::AsRecorded("the tree names no object of a kind the lab serves".into())
    } else {
        Mapping::Intents(
            intents
                .into_iter()
                .map(|i| (i, Fidelity::Partial))
                .collect(),
        )
    }
}

/// `Deployment/checkout`, `ReplicaSet.apps/checkout-5d9f` as kube-lineage prints them.
fn object_ref(word: &str) -> Option<(&'static Kind, String)> {
    let (kind_word, name) = word.split_once('/')?;
    if name.is_empty() || !kind_word.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    Some((kind(kind_word)?, name.to_string()))
}

fn is_dns_label(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A shell line split into words (quotes removed), up to its first pipe.
#[derive(Debug, Default, PartialEq)]
struct ShellLine {
    words: Vec<String>,
    /// Its output went through another command (`| grep …`).
    piped: bool,
    /// It runs more than one command (`;`, `&&`, `||`, `$(…)`, backticks).
    compound: bool,
}

fn shell_line(command: &str) -> ShellLine {
    let mut line = ShellLine::default();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    let flush = |line: &mut ShellLine, word: &mut Option<String>| {
        if let Some(w) = word.take().filter(|_| !line.piped) {
            line.words.push(w);
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, ';' | '`') => line.compound = true,
            (None, '&') if chars.peek() == Some(&'&') => line.compound = true,
            (None, '$') if chars.peek() == Some(&'(') => line.compound = true,
            (None, '|') => {
                flush(&mut line, &mut word);
                if chars.peek() == Some(&'|') {
                    line.compound = true;
                }
                line.piped = true;
            }
            (None, c) if c.is_whitespace() => flush(&mut line, &mut word),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    flush(&mut line, &mut word);
    line
}

/// A `kubectl` command line's arguments and the flags that say what it reads.
#[derive(Debug, Default)]
struct Kubectl {
    args: Vec<String>,
    namespace: Option<String>,
    all_namespaces: bool,
    output: Option<String>,
    container: Option<String>,
    previous: bool,
    all_containers: bool,
    selector: Option<String>,
    field_selector: Option<String>,
    for_object: Option<String>,
}

/// Flags that take a value (as the next word unless written `--flag=value`); a flag not listed
/// is taken to be a switch.
const VALUE_FLAGS: &[&str] = &[
    "-n",
    "--namespace",
    "-o",
    "--output",
    "-c",
    "--container",
    "-l",
    "--selector",
    "--field-selector",
    "--for",
    "--tail",
    "--since",
    "--since-time",
    "--sort-by",
    "--context",
    "--kubeconfig",
    "--cluster",
    "--user",
    "--types",
    "--limit-bytes",
    "--max-log-requests",
    "--request-timeout",
    "-L",
    "--label-columns",
    "--template",
    "--chunk-size",
    "-f",
    "--filename",
];

/// Short flags written with their value attached (`-nshop`, `-oyaml`).
const ATTACHED_VALUE_FLAGS: &[&str] = &["-n", "-o", "-c", "-l"];

fn parse_kubectl(words: &[String]) -> Kubectl {
    let mut k = Kubectl::default();
    let mut rest = words.iter();
    while let Some(word) = rest.next() {
        if !word.starts_with('-') || word == "-" {
            k.args.push(word.clone());
            continue;
        }
        // `--flag=value`; `-nshop`, `-n=shop`; otherwise the value is the next word.
        let (flag, mut value) = if word.starts_with("--") {
            match word.split_once('=') {
                Some((flag, value)) => (flag, Some(value.to_string())),
                None => (word.as_str(), None),
            }
        } else {
            match (word.get(..2), word.get(2..)) {
                (Some(short), Some(attached))
                    if !attached.is_empty() && ATTACHED_VALUE_FLAGS.contains(&short) =>
                {
                    (short, Some(attached.trim_start_matches('=').to_string()))
                }
                _ => (word.as_str(), None),
            }
        };
        if value.is_none() && VALUE_FLAGS.contains(&flag) {
            value = rest.next().cloned();
        }
        let on = value.as_deref() != Some("false");
        match flag {
            "-n" | "--namespace" => k.namespace = value,
            "-A" | "--all-namespaces" => k.all_namespaces = on,
            "-o" | "--output" => k.output = value,
            "-c" | "--container" => k.container = value,
            "-p" | "--previous" => k.previous = on,
            "--all-containers" => k.all_containers = on,
            "-l" | "--selector" => k.selector = value,
            "--field-selector" => k.field_selector = value,
            "--for" => k.for_object = value,
            _ => {}
        }
    }
    k
}

/// What a single `kubectl describe|get|logs|events|top` line reads.
fn kubectl_command(command: &str) -> Result<(Intent, Fidelity), String> {
    let line = shell_line(command);
    if line.compound {
        return Err("runs several commands; only a single `kubectl` command is read".into());
    }
    // Redirections (`2>&1`) do not change what is read.
    let words: Vec<String> = line
        .words
        .into_iter()
        .filter(|w| !w.contains('>'))
        .collect();
    if words.first().map(String::as_str) != Some("kubectl") {
        return Err("not a `kubectl` command".into());
    }
    let k = parse_kubectl(&words[1..]);
    let namespace = k.namespace.clone().filter(|_| !k.all_namespaces);
    let verb = k.args.first().map(String::as_str).unwrap_or_default();
    let what = k.args.get(1).map(String::as_str).unwrap_or_default();
    let partial_if_piped = |fidelity| {
        if line.piped {
            Fidelity::Partial
        } else {
            fidelity
        }
    };
    match verb {
        "describe" | "get" => {
            if what.is_empty() || what.contains(',') {
                return Err(format!("`kubectl {verb}` of no kind or of several kinds"));
            }
            let (kind_word, name) = match what.split_once('/') {
                Some((kind_word, name)) => (kind_word, Some(name.to_string())),
                None => (what, k.args.get(2).cloned()),
            };
            let kind = kind(kind_word)
                .ok_or_else(|| format!("kind `{kind_word}` is not one the lab serves"))?;
            let fidelity = match (verb, k.output.as_deref(), &name) {
                ("describe", _, _) => Fidelity::View,
                (_, Some("yaml"), _) => Fidelity::Same,
                (_, Some("json"), _) => Fidelity::View,
                (_, None | Some("wide"), None) => Fidelity::View,
                _ => Fidelity::Partial,
            };
            let intent = match name {
                Some(name) => Intent::Object {
                    kind,
                    namespace,
                    name: Some(name),
                },
                None => list_of(kind, namespace, k.selector, k.field_selector),
            };
            Ok((intent, partial_if_piped(fidelity)))
        }
        "logs" => {
            let pod = match what.split_once('/') {
                Some((kind_word, pod)) if kind(kind_word).is_some_and(|k| k.name == "Pod") => pod,
                Some(_) => return Err(format!("the log of `{what}`, not of one pod")),
                None => what,
            };
            if pod.is_empty() {
                return Err("`kubectl logs` of no pod".into());
            }
            let fidelity = if k.all_containers {
                Fidelity::View
            } else {
                Fidelity::Same
            };
            Ok((
                Intent::Logs {
                    namespace,
                    pod: Some(pod.to_string()),
                    container: k.container.or_else(|| k.args.get(2).cloned()),
                    previous: Some(k.previous),
                },
                partial_if_piped(fidelity),
            ))
        }
        "events" => {
            let object = k
                .for_object
                .as_deref()
                .map(|o| o.split_once('/').map_or(o, |(_, name)| name).to_string());
            Ok((
                Intent::Events {
                    namespace,
                    field_selector: object
                        .map(|o| format!("involvedObject.name={o}"))
                        .or(k.field_selector),
                },
                partial_if_piped(Fidelity::View),
            ))
        }
        "top" => {
            let nodes = match kind(what).map(|k| k.name) {
                Some("Pod") => false,
                Some("Node") => true,
                _ => return Err(format!("`kubectl top {what}`")),
            };
            Ok((
                Intent::Top {
                    nodes,
                    namespace: namespace.filter(|_| !nodes),
                    name: k.args.get(2).cloned(),
                },
                partial_if_piped(Fidelity::Same),
            ))
        }
        other => Err(format!(
            "`kubectl {other}` has no counterpart on the servers the lab imitates"
        )),
    }
}

type Args = BTreeMap<String, Value>;

fn put(args: &mut Args, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        args.insert(key.to_string(), value.into());
    }
}

/// The real server's tool and the arguments Firstline's call for `intent` carries (those it
/// must carry to be answered by the recording).
fn lab_call(intent: &Intent) -> (&'static str, Args) {
    let mut args = Args::new();
    let tool = match intent {
        Intent::Object {
            kind,
            namespace,
            name,
        } => {
            if kind.name != "Pod" {
                put(&mut args, "apiVersion", Some(api_version(kind.name)));
                put(&mut args, "kind", Some(kind.name));
            }
            put(
                &mut args,
                "namespace",
                namespace.clone().filter(|_| kind.namespaced),
            );
            put(&mut args, "name", name.clone());
            if kind.name == "Pod" {
                "pods_get"
            } else {
                "resources_get"
            }
        }
        Intent::List {
            kind,
            namespace,
            label_selector,
            field_selector,
        } => {
            put(&mut args, "labelSelector", label_selector.clone());
            put(&mut args, "fieldSelector", field_selector.clone());
            let namespace = namespace.clone().filter(|_| kind.namespaced);
            match kind.name {
                "Pod" if namespace.is_some() => {
                    put(&mut args, "namespace", namespace);
                    "pods_list_in_namespace"
                }
                "Pod" => "pods_list",
                "Namespace" => "namespaces_list",
                _ => {
                    put(&mut args, "apiVersion", Some(api_version(kind.name)));
                    put(&mut args, "kind", Some(kind.name));
                    put(&mut args, "namespace", namespace);
                    "resources_list"
                }
            }
        }
        Intent::Logs {
            namespace,
            pod,
            container,
            previous,
        } => {
            put(&mut args, "namespace", namespace.clone());
            put(&mut args, "name", pod.clone());
            put(&mut args, "container", container.clone());
            put(&mut args, "previous", *previous);
            "pods_log"
        }
        Intent::Events {
            namespace,
            field_selector,
        } => {
            put(&mut args, "namespace", namespace.clone());
            put(&mut args, "fieldSelector", field_selector.clone());
            "events_list"
        }
        Intent::Top {
            nodes,
            namespace,
            name,
        } => {
            put(&mut args, "namespace", namespace.clone());
            put(&mut args, "name", name.clone());
            if *nodes { "nodes_top" } else { "pods_top" }
        }
        Intent::Metric { query, range } => {
            put(&mut args, "query", Some(query.as_str()));
            if *range {
                "execute_range_query"
            } else {
                "execute_query"
            }
        }
        Intent::MetricNames => "list_metrics",
        Intent::MetricMetadata { metric } => {
            put(&mut args, "metric", Some(metric.as_str()));
            "get_metric_metadata"
        }
        Intent::Logql(query) => {
            put(&mut args, "logql", Some(query.as_str()));
            "query_loki_logs"
        }
        Intent::Traceql(query) => {
            put(&mut args, "query", Some(query.as_str()));
            "search_tempo_traces"
        }
    };
    (tool, args)
}

/// One lab answer a recording could give.
struct Candidate {
    tool: String,
    args: Args,
    fidelity: Fidelity,
    failed: bool,
    recording: usize,
}

/// The lab's answers for a case's recordings (`(file name, call)`, in file order), and a note
/// (`file (tool): why`) for each recording the investigation, which calls the tools in
/// `called`, will not be answered with.
fn serve(
    recordings: &[(String, RecordedToolCall)],
    called: &[&str],
) -> (Vec<RawToolResult>, Vec<String>) {
    let mut candidates = Vec::new();
    let mut reasons: Vec<Option<String>> = vec![None; recordings.len()];
    for (i, (file, call)) in recordings.iter().enumerate() {
        let failed = call.failed();
        match classify(file, call) {
            Mapping::Intents(intents) => {
                for (intent, fidelity) in intents {
                    let (tool, args) = lab_call(&intent);
                    candidates.push(Candidate {
                        tool: tool.to_string(),
                        args,
                        fidelity,
                        failed,
                        recording: i,
                    });
                }
            }
            Mapping::AsRecorded(why) => {
                let args = match &call.match_params {
                    Value::Object(params) => params
                        .iter()
                        .filter(|(_, v)| v.as_str() != Some("*"))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    _ => Args::new(),
                };
                candidates.push(Candidate {
                    tool: call.tool_name.clone(),
                    args,
                    fidelity: Fidelity::Same,
                    failed,
                    recording: i,
                });
                reasons[i] = Some(format!(
                    "{why}; served under its own name, which the investigation does not call"
                ));
            }
            Mapping::Unmapped(why) => reasons[i] = Some(format!("{why}; not served")),
        }
    }

    // For each call, the best recording: a successful one over a failed one, then the closer
    // to the real answer, then the first by file name.
    candidates.sort_by_key(|c| (c.failed, c.fidelity, c.recording));
    let mut served: Vec<Candidate> = Vec::new();
    let mut shadowed: Vec<Option<String>> = vec![None; recordings.len()];
    for c in candidates {
        match served.iter().find(|s| s.tool == c.tool && s.args == c.args) {
            Some(winner) => {
                shadowed[c.recording].get_or_insert_with(|| {
                    format!(
                        "answers the same call as `{}` ({} {}), which is served instead",
                        recordings[winner.recording].0,
                        c.tool,
                        Value::Object(c.args.clone().into_iter().collect())
                    )
                });
            }
            None => served.push(c),
        }
    }
    for (i, reason) in reasons.iter_mut().enumerate() {
        if reason.is_some() {
            continue;
        }
        let tools: Vec<&str> = served
            .iter()
            .filter(|s| s.recording == i)
            .map(|s| s.tool.as_str())
            .collect();
        if tools.is_empty() {
            *reason = shadowed[i].take();
        } else if !tools.iter().any(|t| called.contains(t)) {
            *reason = Some(format!(
                "served as `{}`, which the investigation does not call",
                tools.join("`, `")
            ));
        }
    }
    let unmapped = recordings
        .iter()
        .zip(reasons)
        .filter_map(|((file, call), reason)| {
            reason.map(|why| format!("{file} ({}): {why}", call.tool_name))
        })
        .collect();

    // The lab serves the first entry whose arguments are a subset of the call's: the more
    // specific first (a pod's log before the namespace's `*`), stable otherwise.
    served.sort_by_key(|s| std::cmp::Reverse(s.args.len()));
    let raw = served
        .into_iter()
        .map(|s| {
            let call = &recordings[s.recording].1;
            let output = call.output().to_string();
            RawToolResult {
                tool: s.tool,
                args: s.args,
                text: (!s.failed).then(|| output.clone()),
                error: s.failed.then_some(output),
                delay_ms: None,
            }
        })
        .collect();
    (raw, unmapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tools Firstline's investigation calls today (the `lab` profile's), fixed here so the
    /// "does not call" notes are tested against a known set.
    const CALLED: &[&str] = &[
        "pods_get",
        "resources_get",
        "resources_list",
        "pods_list_in_namespace",
        "pods_log",
        "events_list",
        "execute_range_query",
        "query_loki_logs",
        "search_tempo_traces",
    ];

    /// A recording in HolmesGPT's format, as `firstline_lab::holmes_fixture` reads it.
    fn recording_text(
        toolset: &str,
        tool: &str,
        params: &Value,
        status: &str,
        body: &str,
    ) -> String {
        let header = json!({"toolset_name": toolset, "tool_name": tool, "match_params": params});
        let code = i32::from(status == "error");
        let status = json!({
            "schema_version": "robusta:v1.0.0", "status": status, "error": null,
            "return_code": code, "data": null, "url": null,
            "invocation": format!("{tool} command"), "params": params,
        });
        format!("{header}\n{status}\nstdout:\n{body}\n\nstderr:\n")
    }

    fn recording(toolset: &str, tool: &str, params: Value, body: &str) -> RecordedToolCall {
        RecordedToolCall::parse(&recording_text(toolset, tool, &params, "success", body))
            .expect("a well-formed recording")
    }

    fn failed(toolset: &str, tool: &str, params: Value, body: &str) -> RecordedToolCall {
        RecordedToolCall::parse(&recording_text(toolset, tool, &params, "error", body))
            .expect("a well-formed recording")
    }

    /// The arguments a lab profile binding of `tool` may carry.
    fn bound_keys(tool: &str) -> Vec<String> {
        profiles::profile("lab")
            .expect("the lab profile")
            .into_iter()
            .filter(|b| b.tool == tool)
            .flat_map(|b| {
                b.args
                    .as_object()
                    .map(|a| a.keys().cloned().collect::<Vec<_>>())
            })
            .flatten()
            .collect()
    }

    /// Serves `recordings` (file name, call), checking that an entry for a tool the
    /// investigation calls asks only for arguments its calls carry.
    fn serve_all(recordings: Vec<(&str, RecordedToolCall)>) -> (Vec<RawToolResult>, Vec<String>) {
        let recordings: Vec<(String, RecordedToolCall)> = recordings
            .into_iter()
            .map(|(f, c)| (f.to_string(), c))
            .collect();
        let (raw, notes) = serve(&recordings, CALLED);
        for r in &raw {
            let keys = bound_keys(&r.tool);
            if !keys.is_empty() {
                for key in r.args.keys() {
                    assert!(
                        keys.contains(key),
                        "{} {key}: not an argument of Firstline's call",
                        r.tool
                    );
                }
            }
        }
        (raw, notes)
    }

    /// The one entry `call` is served as, with no note.
    fn served(file: &str, call: RecordedToolCall) -> RawToolResult {
        let (mut raw, notes) = serve_all(vec![(file, call)]);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(raw.len(), 1, "{raw:?}");
        raw.remove(0)
    }

    /// The note for a recording that is not served to the investigation.
    fn note(file: &str, call: RecordedToolCall) -> (Vec<RawToolResult>, String) {
        let (raw, mut notes) = serve_all(vec![(file, call)]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        (raw, notes.remove(0))
    }

    fn args(value: Value) -> Args {
        serde_json::from_value(value).expect("an object")
    }

    #[test]
    fn the_test_list_is_what_the_lab_profile_calls() {
        let called = profiles::tools("lab");
        for tool in CALLED {
            assert!(called.contains(tool), "{tool} is no longer called");
        }
    }

    #[test]
    fn describe_is_pods_get_for_a_pod_and_resources_get_for_any_other_kind() {
        let pod = served(
            "kubectl_describe.txt",
            recording(
                "kubernetes/core",
                "kubectl_describe",
                json!({"kind": "pod", "name": "p-1", "namespace": "ns"}),
                "Name: p-1",
            ),
        );
        assert_eq!(pod.tool, "pods_get");
        assert_eq!(pod.args, args(json!({"namespace": "ns", "name": "p-1"})));
        assert_eq!(pod.text.as_deref(), Some("Name: p-1"));
        assert!(pod.error.is_none());

        // (as recorded, kind, apiVersion, namespaced)
        let kinds = [
            ("po", "Pod", "v1", true),
            ("Pods", "Pod", "v1", true),
            ("deploy", "Deployment", "apps/v1", true),
            ("deployments.apps", "Deployment", "apps/v1", true),
            ("Deployment", "Deployment", "apps/v1", true),
            ("sts", "StatefulSet", "apps/v1", true),
            ("daemonset", "DaemonSet", "apps/v1", true),
            ("ds", "DaemonSet", "apps/v1", true),
            ("rs", "ReplicaSet", "apps/v1", true),
            ("job", "Job", "batch/v1", true),
            ("cj", "CronJob", "batch/v1", true),
            ("cronjobs", "CronJob", "batch/v1", true),
            ("svc", "Service", "v1", true),
            ("no", "Node", "v1", false),
            ("node", "Node", "v1", false),
            ("pvc", "PersistentVolumeClaim", "v1", true),
            ("pv", "PersistentVolume", "v1", false),
            ("sc", "StorageClass", "storage.k8s.io/v1", false),
            ("hpa", "HorizontalPodAutoscaler", "autoscaling/v2", true),
            ("cm", "ConfigMap", "v1", true),
            ("ns", "Namespace", "v1", false),
            ("ep", "Endpoints", "v1", true),
            ("quota", "ResourceQuota", "v1", true),
            ("ing", "Ingress", "networking.k8s.io/v1", true),
            ("pdb", "PodDisruptionBudget", "policy/v1", true),
        ];
        for (word, kind, api, namespaced) in kinds {
            let r = served(
                "kubectl_describe.txt",
                recording(
                    "kubernetes/core",
                    "kubectl_describe",
                    json!({"kind": word, "name": "x", "namespace": "ns"}),
                    "Name: x",
                ),
            );
            let mut want = if kind == "Pod" {
                assert_eq!(r.tool, "pods_get", "{word}");
                args(json!({"name": "x"}))
            } else {
                assert_eq!(r.tool, "resources_get", "{word}");
                args(json!({"apiVersion": api, "kind": kind, "name": "x"}))
            };
            if namespaced {
                want.insert("namespace".into(), json!("ns"));
            }
            assert_eq!(r.args, want, "{word}");
        }

        for word in ["rollouts.argoproj.io", "secret"] {
            let (raw, why) = note(
                "kubectl_describe.txt",
                recording(
                    "kubernetes/core",
                    "kubectl_describe",
                    json!({"kind": word, "name": "x", "namespace": "ns"}),
                    "x",
                ),
            );
            assert!(raw.is_empty());
            assert!(
                why.contains("not one the lab serves") && why.contains("not served"),
                "{why}"
            );
        }
    }

    #[test]
    fn gets_and_lists_map_onto_resources_and_pod_lists() {
        let core = |tool: &str, params: Value| recording("kubernetes/core", tool, params, "NAME");
        let r = served(
            "y.txt",
            core(
                "kubectl_get_yaml",
                json!({"kind": "deployment", "name": "api", "namespace": "web"}),
            ),
        );
        assert_eq!(
            (r.tool.as_str(), r.args),
            (
                "resources_get",
                args(
                    json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "web", "name": "api"})
                )
            )
        );
        let r = served(
            "g.txt",
            core(
                "kubectl_get_by_name",
                json!({"kind": "pod", "name": "p", "namespace": "web"}),
            ),
        );
        assert_eq!(
            (r.tool.as_str(), r.args),
            ("pods_get", args(json!({"namespace": "web", "name": "p"})))
        );

        let in_namespace = |kind: &str| {
            served(
                "l.txt",
                core(
                    "kubectl_get_by_kind_in_namespace",
                    json!({"kind": kind, "namespace": "web"}),
                ),
            )
        };
        let r = in_namespace("pod");
        assert_eq!(
            (r.tool.as_str(), r.args),
            ("pods_list_in_namespace", args(json!({"namespace": "web"})))
        );
        let r = in_namespace("service");
        assert_eq!(
            (r.tool.as_str(), r.args),
            (
                "resources_list",
                args(json!({"apiVersion": "v1", "kind": "Service", "namespace": "web"}))
            )
        );
        let r = in_namespace("events");
        assert_eq!(
            (r.tool.as_str(), r.args),
            ("events_list", args(json!({"namespace": "web"})))
        );
        let r = in_namespace("nodes");
        assert_eq!(
            (r.tool.as_str(), r.args),
            (
                "resources_list",
                args(json!({"apiVersion": "v1", "kind": "Node"}))
            ),
            "nodes have no namespace"
        );

        let r = served(
            "c.txt",
            core("kubectl_get_by_kind_in_cluster", json!({"kind": "deploy"})),
        );
        assert_eq!(
            (r.tool.as_str(), r.args),
            (
                "resources_list",
                args(json!({"apiVersion": "apps/v1", "kind": "Deployment"}))
            )
        );
        let r = served(
            "f.txt",
            core(
                "kubectl_find_resource",
                json!({"kind": "jobs", "keyword": "backup"}),
            ),
        );
        assert_eq!(
            (r.tool.as_str(), r.args),
            (
                "resources_list",
                args(json!({"apiVersion": "batch/v1", "kind": "Job"}))
            )
        );
        let r = served(
            "q.txt",
            core(
                "kubernetes_jq_query",
                json!({"kind": "pods", "jq_expr": ".items[]", "namespace": "web", "label_selector": "app=api"}),
            ),
        );
        assert_eq!(
            (r.tool.as_str(), r.args),
            (
                "pods_list_in_namespace",
                args(json!({"namespace": "web", "labelSelector": "app=api"}))
            )
        );
        let r = served(
            "n.txt",
            core(
                "kubernetes_count",
                json!({"kind": "persistentvolumeclaims", "jq_expr": ".items[]"}),
            ),
        );
        assert_eq!(
            (r.tool.as_str(), r.args),
            (
                "resources_list",
                args(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim"}))
            )
        );

        // Served under the real servers' names, but the investigation does not list all pods or
        // namespaces: said so.
        for (kind, tool) in [("pods", "pods_list"), ("namespaces", "namespaces_list")] {
            let (raw, why) = note(
                "c.txt",
                core("kubectl_get_by_kind_in_cluster", json!({"kind": kind})),
            );
            assert_eq!(raw.len(), 1);
            assert_eq!((raw[0].tool.as_str(), &raw[0].args), (tool, &Args::new()));
            assert!(
                why.contains(&format!(
                    "served as `{tool}`, which the investigation does not call"
                )),
                "{why}"
            );
        }
    }

    #[test]
    fn every_log_tool_is_pods_log_of_that_pod_and_instance() {
        let logs = |tool: &str, params: Value| recording("kubernetes/logs", tool, params, "boom");
        let pod = json!({"pod_name": "p", "namespace": "ns"});
        let container = json!({"pod_name": "p", "namespace": "ns", "container_name": "c"});
        let grep = json!({"pod_name": "p", "namespace": "ns", "search_term": "error"});
        let cases = [
            (
                "kubectl_logs",
                &pod,
                json!({"namespace": "ns", "name": "p", "previous": false}),
            ),
            (
                "kubectl_previous_logs",
                &pod,
                json!({"namespace": "ns", "name": "p", "previous": true}),
            ),
            (
                "kubectl_logs_all_containers",
                &pod,
                json!({"namespace": "ns", "name": "p", "previous": false}),
            ),
            (
                "kubectl_previous_logs_all_containers",
                &pod,
                json!({"namespace": "ns", "name": "p", "previous": true}),
            ),
            (
                "kubectl_container_logs",
                &container,
                json!({"namespace": "ns", "name": "p", "container": "c", "previous": false}),
            ),
            (
                "kubectl_container_previous_logs",
                &container,
                json!({"namespace": "ns", "name": "p", "container": "c", "previous": true}),
            ),
            (
                "kubectl_logs_grep",
                &grep,
                json!({"namespace": "ns", "name": "p", "previous": false}),
            ),
            (
                "kubectl_logs_all_containers_grep",
                &grep,
                json!({"namespace": "ns", "name": "p", "previous": false}),
            ),
        ];
        for (tool, params, want) in cases {
            let r = served(&format!("{tool}.txt"), logs(tool, params.clone()));
            assert_eq!(
                (r.tool.as_str(), r.args),
                ("pods_log", args(want)),
                "{tool}"
            );
            assert_eq!(r.text.as_deref(), Some("boom"));
        }

        // `fetch_pod_logs` reads both instances, unless the file name says which one it stands for.
        for (file, previous) in [
            ("fetch_pod_logs.txt", None),
            ("kubectl_previous_logs_all_containers.txt", Some(true)),
            ("kubectl_logs.txt", Some(false)),
        ] {
            let r = served(file, logs("fetch_pod_logs", pod.clone()));
            assert_eq!(r.tool, "pods_log");
            assert_eq!(
                r.args.get("previous"),
                previous.map(Value::Bool).as_ref(),
                "{file}"
            );
        }
        let any_pod = served(
            "fetch_pod_logs.txt",
            logs(
                "fetch_pod_logs",
                json!({"pod_name": "*", "namespace": "ns"}),
            ),
        );
        assert_eq!(
            any_pod.args,
            args(json!({"namespace": "ns"})),
            "`*` matches any pod"
        );

        let missing = served(
            "kubectl_previous_logs.txt",
            failed(
                "kubernetes/logs",
                "kubectl_previous_logs",
                pod.clone(),
                "Error from server (BadRequest): previous terminated container \"c\" in pod \"p\" not found",
            ),
        );
        assert!(missing.text.is_none());
        assert!(
            missing
                .error
                .as_deref()
                .is_some_and(|e| e.contains("not found"))
        );
    }

    #[test]
    fn events_of_an_object_carry_it_in_a_field_selector() {
        let events = |params: Value| {
            recording(
                "kubernetes/core",
                "kubectl_events",
                params,
                "LAST SEEN   TYPE",
            )
        };
        // As Firstline asks for a pod's events: `involvedObject.name=<pod>`.
        let r = served(
            "kubectl_events.txt",
            events(json!({"resource_type": "pod", "resource_name": "p", "namespace": "ns"})),
        );
        assert_eq!(
            (r.tool.as_str(), r.args),
            (
                "events_list",
                args(json!({"namespace": "ns", "fieldSelector": "involvedObject.name=p"}))
            )
        );
        // An older shape named the pod `pod_name`.
        let r = served(
            "kubectl_events.txt",
            events(json!({"resource_type": "pod", "pod_name": "p", "namespace": "ns"})),
        );
        assert_eq!(r.args["fieldSelector"], "involvedObject.name=p");
        // Not specific to an object: the namespace's events answer any events call there.
        let r = served(
            "kubectl_events.txt",
            events(json!({"resource_type": "pod", "resource_name": "*", "namespace": "ns"})),
        );
        assert_eq!(r.args, args(json!({"namespace": "ns"})));
    }

    #[test]
    fn usage_is_served_under_the_real_servers_names_and_noted() {
        let live = |tool: &str| {
            recording(
                "kubernetes/live-metrics",
                tool,
                json!({}),
                "NAME   CPU(cores)",
            )
        };
        for (tool, real) in [
            ("kubectl_top_pods", "pods_top"),
            ("kubectl_top_nodes", "nodes_top"),
        ] {
            let (raw, why) = note(&format!("{tool}.txt"), live(tool));
            assert_eq!(raw.len(), 1);
            assert_eq!((raw[0].tool.as_str(), &raw[0].args), (real, &Args::new()));
            assert!(
                why.contains(&format!(
                    "served as `{real}`, which the investigation does not call"
                )),
                "{why}"
            );
        }
        let (raw, why) = note(
            "kubectl_memory_requests_namespace.txt",
            recording(
                "kubernetes/core",
                "kubectl_memory_requests_namespace",
                json!({"namespace": "ns"}),
                "ns p 128 Mi",
            ),
        );
        assert_eq!(raw.len(), 1);
        assert_eq!(raw[0].tool, "kubectl_memory_requests_namespace");
        assert_eq!(raw[0].args, args(json!({"namespace": "ns"})));
        assert!(why.contains("served under its own name"), "{why}");
    }

    #[test]
    fn lineage_answers_for_the_subject_and_every_object_it_names() {
        let tree = "NAMESPACE   NAME                                READY   STATUS    AGE\n\
                    web         Deployment/api                      1/1               3d\n\
                    web         ├── ReplicaSet/api-5d9f8c7b6        1/1               3d\n\
                    web         │   └── Pod/api-5d9f8c7b6-abcde     0/1     Error     3d\n\
                                └── Node/worker-1                   True              9d";
        let call = recording(
            "kubernetes/krew-extras",
            "kubectl_lineage_children",
            json!({"kind": "deployment", "name": "api", "namespace": "web"}),
            tree,
        );
        let (raw, notes) = serve_all(vec![("kubectl_lineage_children.txt", call)]);
        assert!(notes.is_empty(), "{notes:?}");
        let calls: Vec<(&str, &Args)> = raw.iter().map(|r| (r.tool.as_str(), &r.args)).collect();
        assert_eq!(
            calls,
            [
                (
                    "resources_get",
                    &args(
                        json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "web", "name": "api"})
                    )
                ),
                (
                    "resources_get",
                    &args(
                        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "web", "name": "api-5d9f8c7b6"})
                    )
                ),
                (
                    "resources_get",
                    &args(json!({"apiVersion": "v1", "kind": "Node", "name": "worker-1"}))
                ),
                (
                    "pods_get",
                    &args(json!({"namespace": "web", "name": "api-5d9f8c7b6-abcde"}))
                ),
            ]
        );
        assert!(
            raw.iter().all(|r| r.text.as_deref() == Some(tree)),
            "the tree, verbatim"
        );

        // Nothing it names is a kind the lab serves: served as recorded, and noted.
        let call = recording(
            "kubernetes/krew-extras",
            "kubectl_lineage_parents",
            json!({"kind": "rollout", "name": "api"}),
            "Rollout/api",
        );
        let (raw, why) = note("kubectl_lineage_parents.txt", call);
        assert_eq!(
            (raw[0].tool.as_str(), &raw[0].args),
            (
                "kubectl_lineage_parents",
                &args(json!({"kind": "rollout", "name": "api"}))
            )
        );
        assert!(why.contains("names no object"), "{why}");
    }

    #[test]
    fn prometheus_loki_and_tempo_match_on_their_queries() {
        let prom = |tool: &str, params: Value| {
            recording(
                "prometheus/metrics",
                tool,
                params,
                "{\"status\": \"success\"}",
            )
        };
        let query = "rate(http_requests_total{job=\"api\"}[5m])";
        let r = served(
            "q.txt",
            prom(
                "execute_prometheus_range_query",
                json!({"query": query, "description": "rps", "start": "-3600", "end": "now", "step": "60"}),
            ),
        );
        assert_eq!(
            (r.tool.as_str(), r.args),
            ("execute_range_query", args(json!({"query": query})))
        );
        let (raw, why) = note(
            "q.txt",
            prom(
                "execute_prometheus_instant_query",
                json!({"query": query, "description": "rps"}),
            ),
        );
        assert_eq!(
            (raw[0].tool.as_str(), &raw[0].args),
            ("execute_query", &args(json!({"query": query})))
        );
        assert!(
            why.contains("`execute_query`, which the investigation does not call"),
            "{why}"
        );
        let (raw, _) = note(
            "m.txt",
            prom("list_available_metrics", json!({"name_filter": "http"})),
        );
        assert_eq!(
            (raw[0].tool.as_str(), &raw[0].args),
            ("list_metrics", &Args::new())
        );

        let loki = |tool: &str, params: Value| recording("grafana/loki", tool, params, "boom");
        let r = served(
            "l.txt",
            loki(
                "fetch_pod_logs",
                json!({"pod_name": "p", "namespace": "ns"}),
            ),
        );
        assert_eq!(
            (r.tool.as_str(), r.args),
            (
                "query_loki_logs",
                args(json!({"logql": "{namespace=\"ns\", pod=\"p\"}"}))
            )
        );
        let r = served(
            "l.txt",
            loki(
                "fetch_pod_logs",
                json!({"pod_name": "p", "namespace": "ns", "filter": "timeout"}),
            ),
        );
        assert_eq!(
            r.args["logql"],
            "{namespace=\"ns\", pod=\"p\"} |= \"timeout\""
        );
        let r = served(
            "l.txt",
            loki(
                "grafana_loki_query",
                json!({"query": "{app=\"api\"} |= \"error\""}),
            ),
        );
        assert_eq!(r.args["logql"], "{app=\"api\"} |= \"error\"");
        let r = served(
            "l.txt",
            loki("fetch_loki_logs_by_label", json!({"query": "{job=\"x\"}"})),
        );
        assert_eq!(r.tool, "query_loki_logs");

        let tempo = |tool: &str, params: Value| recording("grafana/tempo", tool, params, "traces");
        // As Firstline searches a service's traces.
        let r = served(
            "t.txt",
            tempo(
                "fetch_tempo_traces",
                json!({"service_name": "checkout", "min_duration": "500ms"}),
            ),
        );
        assert_eq!(
            (r.tool.as_str(), r.args),
            (
                "search_tempo_traces",
                args(json!({"query": "{ resource.service.name = \"checkout\" }"}))
            )
        );
        let r = served(
            "t.txt",
            tempo(
                "fetch_tempo_traces",
                json!({"deployment_name": "checkout", "namespace_name": "shop", "min_duration": "1s"}),
            ),
        );
        assert_eq!(
            r.args["query"],
            "{ resource.k8s.namespace.name = \"shop\" && resource.k8s.deployment.name = \"checkout\" }"
        );
        let r = served(
            "t.txt",
            tempo("fetch_tempo_trace_by_id", json!({"trace_id": "abc123"})),
        );
        assert_eq!(r.args["query"], "{ trace:id = \"abc123\" }");
    }

    #[test]
    fn other_toolsets_are_not_served_and_say_why() {
        for (toolset, tool) in [
            ("helm/core", "helm_status"),
            ("argocd/core", "argocd_app_get"),
            ("aws/rds", "aws_rds_describe_instance"),
            ("datadog/logs", "fetch_pod_logs"),
            ("robusta", "fetch_finding_by_id"),
            ("internet", "fetch_webpage"),
            ("runbook", "fetch_runbook"),
        ] {
            let (raw, why) = note("x.txt", recording(toolset, tool, json!({"id": "1"}), "x"));
            assert!(raw.is_empty(), "{tool}");
            assert!(why.starts_with(&format!("x.txt ({tool}): ")), "{why}");
            assert!(
                why.contains(toolset) && why.ends_with("not served"),
                "{why}"
            );
        }
    }

    #[test]
    fn kubectl_lines_run_by_their_bash_tool_read_as_the_tool_they_are() {
        let bash = |command: &str| recording("bash", "bash", json!({"command": command}), "out");
        let cases = [
            (
                "kubectl describe pod p -n ns",
                "pods_get",
                json!({"namespace": "ns", "name": "p"}),
            ),
            (
                "kubectl get deploy/api -n web -o yaml",
                "resources_get",
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "web", "name": "api"}),
            ),
            (
                "kubectl get pods -n web -l app=api",
                "pods_list_in_namespace",
                json!({"namespace": "web", "labelSelector": "app=api"}),
            ),
            (
                "kubectl get po -lapp=api -n=web",
                "pods_list_in_namespace",
                json!({"namespace": "web", "labelSelector": "app=api"}),
            ),
            (
                "kubectl get jobs -A",
                "resources_list",
                json!({"apiVersion": "batch/v1", "kind": "Job"}),
            ),
            (
                "kubectl logs p -n ns -c app --previous",
                "pods_log",
                json!({"namespace": "ns", "name": "p", "container": "app", "previous": true}),
            ),
            (
                "kubectl logs pod/p --namespace=ns | grep -i error",
                "pods_log",
                json!({"namespace": "ns", "name": "p", "previous": false}),
            ),
            (
                "kubectl get events -n ns --field-selector involvedObject.name=p",
                "events_list",
                json!({"namespace": "ns", "fieldSelector": "involvedObject.name=p"}),
            ),
            (
                "kubectl events --for pod/p -n ns",
                "events_list",
                json!({"namespace": "ns", "fieldSelector": "involvedObject.name=p"}),
            ),
            (
                "kubectl get events -nns --field-selector 'type=Warning'",
                "events_list",
                json!({"namespace": "ns", "fieldSelector": "type=Warning"}),
            ),
        ];
        for (command, tool, want) in cases {
            let call = recording(
                "bash",
                "run_bash_command",
                json!({"command": command}),
                "out",
            );
            let r = served("bash.txt", call);
            assert_eq!((r.tool.as_str(), r.args), (tool, args(want)), "{command}");
        }
        for command in [
            "kubectl get pods -n a && kubectl get pods -n b",
            "helm list -A",
            "kubectl exec p -- env",
            "kubectl logs deploy/api",
        ] {
            let (raw, why) = note("bash.txt", bash(command));
            assert!(raw.is_empty(), "{command}");
            assert!(why.contains(command), "{why}");
        }
    }

    #[test]
    fn one_recording_answers_each_call_and_the_specific_come_first() {
        let pod = json!({"kind": "pod", "name": "p", "namespace": "ns"});
        let logs = json!({"pod_name": "p", "namespace": "ns"});
        let (raw, notes) = serve_all(vec![
            (
                "kubectl_describe.txt",
                recording(
                    "kubernetes/core",
                    "kubectl_describe",
                    pod.clone(),
                    "Name: p",
                ),
            ),
            (
                "kubectl_get_yaml.txt",
                recording(
                    "kubernetes/core",
                    "kubectl_get_yaml",
                    pod.clone(),
                    "kind: Pod",
                ),
            ),
            (
                "kubectl_logs.txt",
                failed(
                    "kubernetes/logs",
                    "kubectl_logs",
                    logs.clone(),
                    "a container name must be specified",
                ),
            ),
            (
                "kubectl_logs_all_containers.txt",
                recording(
                    "kubernetes/logs",
                    "kubectl_logs_all_containers",
                    logs.clone(),
                    "boom",
                ),
            ),
            (
                "namespace.txt",
                recording(
                    "kubernetes/logs",
                    "fetch_pod_logs",
                    json!({"pod_name": "*", "namespace": "ns"}),
                    "any",
                ),
            ),
        ]);
        let calls: Vec<(&str, Option<&str>)> = raw
            .iter()
            .map(|r| (r.tool.as_str(), r.text.as_deref()))
            .collect();
        assert_eq!(
            calls,
            [
                ("pods_log", Some("boom")),
                ("pods_get", Some("kind: Pod")),
                ("pods_log", Some("any"))
            ],
            "the YAML over describe, a log over a failure, a pod's log before the namespace's"
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("kubectl_describe.txt (kubectl_describe): answers the same call as `kubectl_get_yaml.txt`"), "{notes:?}");
        assert!(notes[1].starts_with("kubectl_logs.txt (kubectl_logs): answers the same call as `kubectl_logs_all_containers.txt`"), "{notes:?}");
    }

    #[test]
    fn a_case_directory_loads_with_its_notes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let write =
            |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
        write(
            "investigate_request.json",
            r#"{"source": "prometheus", "title": "KubePodCrashLooping", "description": "", "subject": {"name": "p", "namespace": "ns", "kind": "pod"}, "context": {"issue_type": "KubePodCrashLooping"}}"#,
        );
        write(
            "rubric.yaml",
            "expect:\n  verdict: either\n  must_mention: [[\"p\"]]\n",
        );
        let params = json!({"kind": "pod", "name": "p", "namespace": "ns"});
        write(
            "kubectl_describe.txt",
            &recording_text(
                "kubernetes/core",
                "kubectl_describe",
                &params,
                "success",
                "Name: p",
            ),
        );
        write(
            "kubectl_top_pods.txt",
            &recording_text(
                "kubernetes/live-metrics",
                "kubectl_top_pods",
                &json!({}),
                "success",
                "ns p 1m 10Mi",
            ),
        );
        write(
            "helm_status.txt",
            &recording_text(
                "helm/core",
                "helm_status",
                &json!({"release_name": "r"}),
                "success",
                "deployed",
            ),
        );
        write("notes.txt", "not a recording");

        let case = load("synthetic", dir.path(), Utc::now()).expect("the case loads");
        let tools: Vec<&str> = case
            .scenario
            .spec
            .raw_tool_results
            .iter()
            .map(|r| r.tool.as_str())
            .collect();
        assert_eq!(tools, ["pods_get", "pods_top"]);
        let mut want = vec!["helm_status.txt (helm_status): "];
        // Until a capability calls `pods_top`, the investigation is never answered with it.
        if !profiles::tools("lab").contains(&"pods_top") {
            want.push("kubectl_top_pods.txt (kubectl_top_pods): served as `pods_top`");
        }
        want.push("notes.txt: not a recorded tool call");
        assert_eq!(case.unmapped.len(), want.len(), "{:?}", case.unmapped);
        for (note, want) in case.unmapped.iter().zip(want) {
            assert!(note.starts_with(want), "{note}");
        }
    }

    #[test]
    fn the_vendored_cases_serve_every_kubernetes_recording() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("third_party/peer/holmesgpt");
        for name in [
            "01_oom_kill",
            "02_crashloop_backoff",
            "04_image_pull_backoff",
            "05_crashpod",
            "06_job_failure",
        ] {
            let case = load(name, &root.join(name), Utc::now()).expect("the case loads");
            assert!(!case.scenario.spec.raw_tool_results.is_empty(), "{name}");
            for note in &case.unmapped {
                let finding = note.starts_with("fetch_finding_by_id.txt (fetch_finding_by_id)");
                // Their fixtures recorded the same log under several tool names.
                let same_call = note.contains("answers the same call as");
                assert!(finding || same_call, "{name}: {note}");
            }
        }
        let job =
            load("06_job_failure", &root.join("06_job_failure"), Utc::now()).expect("06 loads");
        let raw = &job.scenario.spec.raw_tool_results;
        let find = |tool: &str| raw.iter().find(|r| r.tool == tool).map(|r| &r.args);
        assert_eq!(
            find("resources_get"),
            Some(&args(
                json!({"apiVersion": "batch/v1", "kind": "Job", "namespace": "default", "name": "java-api-checker"})
            ))
        );
        assert_eq!(
            find("events_list"),
            Some(&args(
                json!({"namespace": "default", "fieldSelector": "involvedObject.name=java-api-checker-jzzdd"})
            ))
        );
        assert!(
            raw.iter()
                .any(|r| r.tool == "pods_log" && r.args["previous"] == true && r.error.is_some()),
            "the missing previous log stays a tool error"
        );
    }

    #[test]
    fn the_alert_text_names_the_subject() {
        let text = alert_text(&json!({
            "title": "KubePodCrashLooping",
            "description": "",
            "subject": {"name": "db-1", "namespace": "default", "kind": "pod", "node": null}
        }));
        assert_eq!(
            text,
            "KubePodCrashLooping\nname=db-1\nnamespace=default\nkind=pod"
        );
    }
}
