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

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::reltime::{RelTime, parse_offset};
use crate::scenario::{ContainerStateSpec, DeploymentSpec, PodSpec, Scenario};

/// A tool's answer, or its error message.
pub type Rendered = Result<String, String>;

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Go's `time.Time.String()` for UTC, as kubernetes-mcp-server prints event timestamps.
fn go_time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S +0000 UTC").to_string()
}

/// YAML with keys sorted at every level, whatever serde_json's map order is.
pub fn to_yaml(value: &Value) -> String {
    #[derive(Serialize)]
    #[serde(untagged)]
    enum Sorted<'a> {
        Map(BTreeMap<&'a str, Sorted<'a>>),
        List(Vec<Sorted<'a>>),
        Leaf(&'a Value),
    }
    fn sort(value: &Value) -> Sorted<'_> {
        match value {
            Value::Object(map) => {
                Sorted::Map(map.iter().map(|(k, v)| (k.as_str(), sort(v))).collect())
            }
            Value::Array(items) => Sorted::List(items.iter().map(sort).collect()),
            leaf => Sorted::Leaf(leaf),
        }
    }
    serde_norway::to_string(&sort(value)).unwrap_or_else(|e| format!("# unrenderable: {e}\n"))
}

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn required<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    str_arg(args, key).ok_or_else(|| format!("failed to get required parameter `{key}`"))
}

/// A short, stable, Kubernetes-looking hash (pod-template-hash alphabet).
fn k8s_hash(seed: &str, len: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut out = String::new();
    for round in 0..len {
        for b in seed.bytes().chain([round as u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push(ALPHABET[(h % ALPHABET.len() as u64) as usize] as char);
    }
    out
}

fn replica_set_name(deployment: &DeploymentSpec, revision: usize) -> String {
    format!(
        "{}-{}",
        deployment.name,
        k8s_hash(&format!("{}/{}", deployment.name, revision), 10)
    )
}

fn state_value(scenario: &Scenario, state: &ContainerStateSpec) -> Value {
    let mut out = Map::new();
    if let Some(w) = &state.waiting {
        let mut m = Map::new();
        m.insert("reason".into(), json!(w.reason));
        if let Some(msg) = &w.message {
            m.insert("message".into(), json!(msg));
        }
        out.insert("waiting".into(), Value::Object(m));
    }
    if let Some(r) = &state.running {
        let started = scenario.time(r.started_at.unwrap_or(RelTime::Offset(Duration::hours(-1))));
        out.insert("running".into(), json!({"startedAt": rfc3339(started)}));
    }
    if let Some(t) = &state.terminated {
        let mut m = Map::new();
        m.insert("exitCode".into(), json!(t.exit_code));
        m.insert(
            "reason".into(),
            json!(t.reason.clone().unwrap_or_else(|| if t.exit_code == 0 {
                "Completed".into()
            } else {
                "Error".into()
            })),
        );
        if let Some(msg) = &t.message {
            m.insert("message".into(), json!(msg));
        }
        if let Some(signal) = t.signal {
            m.insert("signal".into(), json!(signal));
        }
        if let Some(at) = t.started_at {
            m.insert("startedAt".into(), json!(rfc3339(scenario.time(at))));
        }
        if let Some(at) = t.finished_at {
            m.insert("finishedAt".into(), json!(rfc3339(scenario.time(at))));
        }
        m.insert(
            "containerID".into(),
            json!(format!("containerd://{}", k8s_hash(&format!("{m:?}"), 24))),
        );
        out.insert("terminated".into(), Value::Object(m));
    }
    Value::Object(out)
}

/// The Pod object, as Kubernetes would return it.
pub fn pod_object(scenario: &Scenario, pod: &PodSpec) -> Value {
    let created = scenario.time(pod.created.unwrap_or(RelTime::Offset(Duration::hours(-1))));
    let mut labels = pod.labels.clone();
    let mut owner = Vec::new();
    if let Some(deployment) = pod.deployment.as_ref().and_then(|name| {
        scenario
            .spec
            .deployments
            .iter()
            .find(|d| &d.name == name && d.namespace == pod.namespace)
    }) {
        let latest = deployment.revisions.len();
        let rs = replica_set_name(deployment, latest);
        labels
            .entry("app".into())
            .or_insert_with(|| deployment.name.clone());
        labels.insert(
            "pod-template-hash".into(),
            rs.rsplit('-').next().unwrap_or_default().to_string(),
        );
        owner.push(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
            "controller": true, "blockOwnerDeletion": true,
            "uid": k8s_hash(&format!("uid/{}", rs), 16),
        }));
    }
    let containers: Vec<Value> = pod
        .containers
        .iter()
        .map(|c| {
            let mut spec = Map::new();
            spec.insert("name".into(), json!(c.name));
            spec.insert("image".into(), json!(c.image));
            spec.insert("imagePullPolicy".into(), json!("IfNotPresent"));
            spec.insert("resources".into(), json!(c.resources));
            for (k, v) in &c.spec_extra {
                spec.insert(k.clone(), v.clone());
            }
            Value::Object(spec)
        })
        .collect();
    let statuses: Vec<Value> = pod
        .containers
        .iter()
        .map(|c| {
            let running = ContainerStateSpec {
                waiting: None,
                running: Some(crate::scenario::RunningSpec { started_at: None }),
                terminated: None,
            };
            let state = c.state.as_ref().unwrap_or(&running);
            json!({
                "name": c.name,
                "image": c.image,
                "imageID": format!("{}@sha256:{}", c.image.split(':').next().unwrap_or_default(), k8s_hash(&c.image, 32)),
                "ready": c.ready,
                "started": state.running.is_some(),
                "restartCount": c.restart_count,
                "state": state_value(scenario, state),
                "lastState": c.last_state.as_ref().map_or(json!({}), |s| state_value(scenario, s)),
            })
        })
        .collect();
    let all_ready = pod.containers.iter().all(|c| c.ready);
    let conditions: Vec<Value> = if pod.conditions.is_empty() {
        let ready = if all_ready { "True" } else { "False" };
        let mut list = vec![
            json!({"type": "PodScheduled", "status": if pod.node.is_some() { "True" } else { "False" }, "lastTransitionTime": rfc3339(created)}),
        ];
        if pod.node.is_some() {
            list.push(json!({"type": "Initialized", "status": "True", "lastTransitionTime": rfc3339(created)}));
            let mut c = json!({"type": "ContainersReady", "status": ready, "lastTransitionTime": rfc3339(created)});
            let mut r =
                json!({"type": "Ready", "status": ready, "lastTransitionTime": rfc3339(created)});
            if !all_ready {
                let names: Vec<&str> = pod
                    .containers
                    .iter()
                    .filter(|c| !c.ready)
                    .map(|c| c.name.as_str())
                    .collect();
                let message = format!("containers with unready status: [{}]", names.join(" "));
                for v in [&mut c, &mut r] {
                    v["reason"] = json!("ContainersNotReady");
                    v["message"] = json!(message);
                }
            }
            list.push(c);
            list.push(r);
        }
        list
    } else {
        pod.conditions
            .iter()
            .map(|c| {
                let mut m = Map::new();
                m.insert("type".into(), json!(c.kind));
                m.insert("status".into(), json!(c.status));
                if let Some(r) = &c.reason {
                    m.insert("reason".into(), json!(r));
                }
                if let Some(msg) = &c.message {
                    m.insert("message".into(), json!(msg));
                }
                m.insert(
                    "lastTransitionTime".into(),
                    json!(rfc3339(
                        scenario.time(c.at.unwrap_or(RelTime::Offset(Duration::zero())))
                    )),
                );
                Value::Object(m)
            })
            .collect()
    };
    let phase = pod.phase.clone().unwrap_or_else(|| {
        if pod.node.is_some() {
            "Running"
        } else {
            "Pending"
        }
        .to_string()
    });
    let mut spec = Map::new();
    spec.insert("containers".into(), Value::Array(containers));
    spec.insert("restartPolicy".into(), json!("Always"));
    if let Some(node) = &pod.node {
        spec.insert("nodeName".into(), json!(node));
    }
    for (k, v) in &pod.spec_extra {
        spec.insert(k.clone(), v.clone());
    }
    let mut status = Map::new();
    status.insert("phase".into(), json!(phase));
    status.insert("conditions".into(), Value::Array(conditions));
    status.insert("qosClass".into(), json!("Burstable"));
    if pod.node.is_some() {
        status.insert("containerStatuses".into(), Value::Array(statuses));
        status.insert("startTime".into(), json!(rfc3339(created)));
        status.insert(
            "podIP".into(),
            json!(format!(
                "10.244.{}.{}",
                created.timestamp() % 200,
                pod.name.len() + 10
            )),
        );
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(pod.name));
    metadata.insert("namespace".into(), json!(pod.namespace));
    metadata.insert("creationTimestamp".into(), json!(rfc3339(created)));
    metadata.insert(
        "uid".into(),
        json!(k8s_hash(&format!("pod/{}", pod.name), 16)),
    );
    if !labels.is_empty() {
        metadata.insert("labels".into(), json!(labels));
    }
    if !owner.is_empty() {
        metadata.insert("ownerReferences".into(), Value::Array(owner));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// The ReplicaSets of a deployment, oldest revision first.
pub fn replica_sets(scenario: &Scenario, deployment: &DeploymentSpec) -> Vec<Value> {
    let latest = deployment.revisions.len();
    let container = deployment
        .container
        .clone()
        .unwrap_or_else(|| deployment.name.clone());
    deployment
        .revisions
        .iter()
        .enumerate()
        .map(|(i, revision)| {
            let number = i + 1;
            let name = replica_set_name(deployment, number);
            let hash = name.rsplit('-').next().unwrap_or_default().to_string();
            let replicas = if number == latest { deployment.replicas } else { 0 };
            let mut annotations = Map::new();
            annotations.insert("deployment.kubernetes.io/revision".into(), json!(number.to_string()));
            annotations.insert("deployment.kubernetes.io/desired-replicas".into(), json!(deployment.replicas.to_string()));
            if let Some(cause) = &revision.change_cause {
                annotations.insert("kubernetes.io/change-cause".into(), json!(cause));
            }
            json!({
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": name,
                    "namespace": deployment.namespace,
                    "creationTimestamp": rfc3339(scenario.time(revision.created)),
                    "labels": {"app": deployment.name, "pod-template-hash": hash},
                    "annotations": annotations,
                    "ownerReferences": [{
                        "apiVersion": "apps/v1", "kind": "Deployment", "name": deployment.name,
                        "controller": true, "blockOwnerDeletion": true,
                        "uid": k8s_hash(&format!("uid/{}", deployment.name), 16),
                    }],
                },
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": deployment.name, "pod-template-hash": hash}},
                    "template": {
                        "metadata": {"labels": {"app": deployment.name, "pod-template-hash": hash}},
                        "spec": {"containers": [{"name": container, "image": revision.image}]},
                    },
                },
                "status": {"replicas": replicas, "observedGeneration": number},
            })
        })
        .collect()
}

/// The Deployment object.
pub fn deployment_object(scenario: &Scenario, deployment: &DeploymentSpec) -> Value {
    let container = deployment
        .container
        .clone()
        .unwrap_or_else(|| deployment.name.clone());
    let first = deployment
        .revisions
        .first()
        .map(|r| scenario.time(r.created));
    let latest = deployment.revisions.last();
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": deployment.name,
            "namespace": deployment.namespace,
            "creationTimestamp": first.map(rfc3339),
            "annotations": {"deployment.kubernetes.io/revision": deployment.revisions.len().to_string()},
            "labels": {"app": deployment.name},
        },
        "spec": {
            "replicas": deployment.replicas,
            "selector": {"matchLabels": {"app": deployment.name}},
            "template": {
                "metadata": {"labels": {"app": deployment.name}},
                "spec": {"containers": [{"name": container, "image": latest.map(|r| r.image.clone())}]},
            },
        },
    })
}

fn find_pod<'a>(
    scenario: &'a Scenario,
    namespace: Option<&str>,
    name: &str,
) -> Option<&'a PodSpec> {
    scenario
        .spec
        .pods
        .iter()
        .find(|p| p.name == name && namespace.is_none_or(|ns| p.namespace == ns))
}

/// `pods_get` {namespace, name}.
pub fn pods_get(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let name = required(args, "name")?;
    let namespace = str_arg(args, "namespace");
    let pod = find_pod(scenario, namespace, name).ok_or_else(|| {
        format!(
            "failed to get pod {name} in namespace {}: pods \"{name}\" not found",
            namespace.unwrap_or("default")
        )
    })?;
    Ok(to_yaml(&pod_object(scenario, pod)))
}

/// `pods_log` {namespace, name, container, previous, tail}.
pub fn pods_log(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let name = required(args, "name")?;
    let namespace = str_arg(args, "namespace");
    let ns_shown = namespace.unwrap_or("default");
    let previous = args
        .get("previous")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let tail = args.get("tail").and_then(Value::as_u64).unwrap_or(100) as usize;
    let pod = find_pod(scenario, namespace, name).ok_or_else(|| {
        format!("failed to get pod {name} log in namespace {ns_shown}: pods \"{name}\" not found")
    })?;
    let container = match str_arg(args, "container") {
        Some(c) => {
            if !pod.containers.iter().any(|pc| pc.name == c) {
                return Err(format!(
                    "failed to get pod {name} log in namespace {ns_shown}: container {c} is not valid for pod {name}"
                ));
            }
            c.to_string()
        }
        None if pod.containers.len() == 1 => pod.containers[0].name.clone(),
        None => {
            let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
            return Err(format!(
                "failed to get pod {name} log in namespace {ns_shown}: a container name must be specified for pod {name}, choose one of: [{}]",
                names.join(" ")
            ));
        }
    };
    let log = scenario.spec.logs.iter().find(|l| {
        l.pod == pod.name
            && l.container
                .as_deref()
                .unwrap_or(pod.containers[0].name.as_str())
                == container
    });
    let text = if previous {
        match log.and_then(|l| l.previous.as_deref()) {
            Some(text) => text,
            None => {
                return Err(format!(
                    "failed to get pod {name} log in namespace {ns_shown}: previous terminated container \"{container}\" in pod \"{name}\" not found"
                ));
            }
        }
    } else {
        log.and_then(|l| l.current.as_deref()).unwrap_or("")
    };
    let lines: Vec<&str> = text.lines().collect();
    let kept = &lines[lines.len().saturating_sub(tail)..];
    if kept.iter().all(|l| l.trim().is_empty()) {
        return Ok(format!(
            "The pod {name} in namespace {ns_shown} has not logged any message yet"
        ));
    }
    Ok(kept.join("\n") + "\n")
}

/// Field selectors as Kubernetes accepts them: `a=b,c!=d`.
fn field_selector_matches(selector: Option<&str>, field: impl Fn(&str) -> Option<String>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        let (key, value, negate) = if let Some((k, v)) = term.split_once("!=") {
            (k, v, true)
        } else if let Some((k, v)) = term.split_once("==") {
            (k, v, false)
        } else if let Some((k, v)) = term.split_once('=') {
            (k, v, false)
        } else {
            return false;
        };
        let actual = field(key.trim()).unwrap_or_default();
        (actual == value.trim()) != negate
    })
}

/// `events_list` {namespace, fieldSelector}.
pub fn events_list(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let namespace = str_arg(args, "namespace");
    let selector = str_arg(args, "fieldSelector");
    let mut events: Vec<(DateTime<Utc>, Value)> = scenario
        .spec
        .events
        .iter()
        .filter_map(|e| {
            let ns = e
                .namespace
                .clone()
                .or_else(|| e.involved_object.namespace.clone())
                .unwrap_or_else(|| "default".into());
            if namespace.is_some_and(|want| want != ns) {
                return None;
            }
            let matches = field_selector_matches(selector, |key| match key {
                "involvedObject.name" => Some(e.involved_object.name.clone()),
                "involvedObject.kind" => Some(e.involved_object.kind.clone()),
                "involvedObject.namespace" => Some(ns.clone()),
                "type" => Some(e.kind.clone()),
                "reason" => Some(e.reason.clone()),
                _ => None,
            });
            if !matches {
                return None;
            }
            let at = scenario.time(e.at);
            let api_version = match e.involved_object.kind.as_str() {
                "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" => "apps/v1",
                "Job" | "CronJob" => "batch/v1",
                _ => "v1",
            };
            Some((
                at,
                json!({
                    "InvolvedObject": {"Kind": e.involved_object.kind, "Name": e.involved_object.name, "apiVersion": api_version},
                    "Message": e.message.trim(),
                    "Namespace": ns,
                    "Reason": e.reason,
                    "Timestamp": go_time(at),
                    "Type": e.kind,
                }),
            ))
        })
        .collect();
    if events.is_empty() {
        return Ok("# No events found".into());
    }
    events.sort_by_key(|(at, _)| *at);
    let list = Value::Array(events.into_iter().map(|(_, v)| v).collect());
    Ok(format!(
        "# The following events (YAML format) were found:\n{}",
        to_yaml(&list)
    ))
}

fn label_selector_matches(selector: Option<&str>, labels: &Value) -> bool {
    field_selector_matches(selector, |key| {
        labels.get(key).and_then(Value::as_str).map(String::from)
    })
}

fn objects_of_kind(
    scenario: &Scenario,
    api_version: &str,
    kind: &str,
) -> Result<Vec<Value>, String> {
    let spec = &scenario.spec;
    Ok(match (api_version, kind) {
        ("apps/v1", "ReplicaSet") => spec
            .deployments
            .iter()
            .flat_map(|d| replica_sets(scenario, d))
            .collect(),
        ("apps/v1", "Deployment") => spec
            .deployments
            .iter()
            .map(|d| deployment_object(scenario, d))
            .collect(),
        ("v1", "Pod") => spec.pods.iter().map(|p| pod_object(scenario, p)).collect(),
        ("v1" | "apps/v1" | "batch/v1" | "networking.k8s.io/v1", _) => Vec::new(),
        _ => {
            return Err(format!(
                "failed to list resources: no matches for kind \"{kind}\" in version \"{api_version}\""
            ));
        }
    })
}

/// `resources_list` {apiVersion, kind, namespace, labelSelector, fieldSelector}.
pub fn resources_list(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let api_version = required(args, "apiVersion")?;
    let kind = required(args, "kind")?;
    let namespace = str_arg(args, "namespace");
    let labels = str_arg(args, "labelSelector");
    let fields = str_arg(args, "fieldSelector");
    let items: Vec<Value> = objects_of_kind(scenario, api_version, kind)?
        .into_iter()
        .filter(|o| namespace.is_none_or(|ns| o["metadata"]["namespace"] == ns))
        .filter(|o| label_selector_matches(labels, &o["metadata"]["labels"]))
        .filter(|o| {
            field_selector_matches(fields, |key| match key {
                "metadata.name" => o["metadata"]["name"].as_str().map(String::from),
                "metadata.namespace" => o["metadata"]["namespace"].as_str().map(String::from),
                _ => None,
            })
        })
        .collect();
    Ok(to_yaml(&Value::Array(items)))
}

/// `pods_list_in_namespace` {namespace, labelSelector, fieldSelector}: the matching Pods as YAML.
pub fn pods_list_in_namespace(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let namespace = required(args, "namespace")?;
    let labels = str_arg(args, "labelSelector");
    let fields = str_arg(args, "fieldSelector");
    let items: Vec<Value> = scenario
        .spec
        .pods
        .iter()
        .filter(|p| p.namespace == namespace)
        .map(|p| pod_object(scenario, p))
        .filter(|o| label_selector_matches(labels, &o["metadata"]["labels"]))
        .filter(|o| {
            field_selector_matches(fields, |key| match key {
                "metadata.name" => o["metadata"]["name"].as_str().map(String::from),
                "status.phase" => o["status"]["phase"].as_str().map(String::from),
                _ => None,
            })
        })
        .collect();
    Ok(to_yaml(&Value::Array(items)))
}

/// `resources_get` {apiVersion, kind, namespace, name}.
pub fn resources_get(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let api_version = required(args, "apiVersion")?;
    let kind = required(args, "kind")?;
    let name = required(args, "name")?;
    let namespace = str_arg(args, "namespace");
    objects_of_kind(scenario, api_version, kind)?
        .into_iter()
        .find(|o| {
            o["metadata"]["name"] == name
                && namespace.is_none_or(|ns| o["metadata"]["namespace"] == ns)
        })
        .map(|o| to_yaml(&o))
        .ok_or_else(|| {
            format!(
                "failed to get resource: {}.{} \"{name}\" not found",
                kind.to_lowercase(),
                api_version.split('/').next().unwrap_or_default()
            )
        })
}

/// Parses an RFC 3339 or Unix-seconds time argument.
fn time_arg(args: &Map<String, Value>, key: &str) -> Result<Option<DateTime<Utc>>, String> {
    let Some(value) = args.get(key).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    if let Some(n) = value.as_f64() {
        return DateTime::from_timestamp(n as i64, 0)
            .map(Some)
            .ok_or_else(|| format!("invalid `{key}`: {n}"));
    }
    let text = value.as_str().unwrap_or_default().trim();
    if let Ok(n) = text.parse::<f64>() {
        return DateTime::from_timestamp(n as i64, 0)
            .map(Some)
            .ok_or_else(|| format!("invalid `{key}`: {text}"));
    }
    DateTime::parse_from_rfc3339(text)
        .map(|t| Some(t.with_timezone(&Utc)))
        .map_err(|e| format!("invalid `{key}` {text:?}: {e} (use RFC 3339 or a Unix timestamp)"))
}

fn squash(query: &str) -> String {
    query.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Prometheus' point limit per series.
const MAX_POINTS: i64 = 11_000;

fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v}")
    }
}

/// `execute_range_query` {query, start, end, step}.
pub fn execute_range_query(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let query = required(args, "query")?;
    let start = time_arg(args, "start")?.ok_or("failed to get required parameter `start`")?;
    let end = time_arg(args, "end")?.ok_or("failed to get required parameter `end`")?;
    let step_text = match args.get("step") {
        Some(Value::Number(n)) => format!("{n}s"),
        Some(Value::String(s)) => s.clone(),
        _ => return Err("failed to get required parameter `step`".into()),
    };
    let step = parse_offset(&step_text)
        .or_else(|| step_text.parse::<i64>().ok().map(Duration::seconds))
        .filter(|d| *d > Duration::zero())
        .ok_or_else(|| {
            format!("invalid parameter \"step\": cannot parse {step_text:?} to a valid duration")
        })?;
    if end < start {
        return Err(
            "invalid parameter \"end\": end timestamp must not be before start time".into(),
        );
    }
    if (end - start).num_milliseconds() / step.num_milliseconds().max(1) > MAX_POINTS {
        return Err("exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)".into());
    }
    let wanted = squash(query);
    let mut result = Vec::new();
    for metric in scenario
        .spec
        .metrics
        .iter()
        .filter(|m| squash(&m.query) == wanted)
    {
        let mut values = Vec::new();
        let mut t = start;
        while t <= end {
            let value = if let Some(c) = metric.constant {
                Some(c)
            } else if let Some(s) = &metric.step {
                Some(if t < scenario.time(s.at) {
                    s.before
                } else {
                    s.after
                })
            } else {
                metric.points.as_ref().and_then(|points| {
                    points
                        .iter()
                        .filter(|(at, _)| scenario.time(*at) <= t)
                        .max_by_key(|(at, _)| scenario.time(*at))
                        .map(|(_, v)| *v)
                })
            };
            if let Some(v) = value {
                values.push(json!([t.timestamp(), format_value(v)]));
            }
            t += step;
        }
        if !values.is_empty() {
            result.push(json!({"metric": metric.labels, "values": values}));
        }
    }
    Ok(json!({"resultType": "matrix", "result": result}).to_string())
}

/// `query_loki_logs` {datasourceUid, logql, startRfc3339, endRfc3339, limit, direction}.
pub fn query_loki_logs(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let logql = required(args, "logql")?;
    let start = time_arg(args, "startRfc3339")?;
    let end = time_arg(args, "endRfc3339")?;
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(10)
        .min(100) as usize;
    let forward = str_arg(args, "direction") == Some("forward");
    let wanted = squash(logql);
    let mut entries: Vec<(DateTime<Utc>, Value)> = Vec::new();
    for stream in scenario
        .spec
        .log_streams
        .iter()
        .filter(|s| squash(&s.query) == wanted)
    {
        for line in &stream.lines {
            let at = scenario.time(line.at);
            if start.is_some_and(|s| at < s) || end.is_some_and(|e| at > e) {
                continue;
            }
            let nanos = at.timestamp_nanos_opt().unwrap_or_default();
            entries.push((
                at,
                json!({"timestamp": nanos.to_string(), "line": line.line, "labels": stream.labels}),
            ));
        }
    }
    entries.sort_by_key(|(at, _)| *at);
    if !forward {
        entries.reverse();
    }
    entries.truncate(limit);
    Ok(Value::Array(entries.into_iter().map(|(_, v)| v).collect()).to_string())
}

/// The service a TraceQL query filters on (`resource.service.name = "x"`), if any.
fn traceql_service(query: &str) -> Option<String> {
    let at = query.find("service.name")?;
    let rest = &query[at..];
    let open = rest.find('"')?;
    let close = rest[open + 1..].find('"')?;
    Some(rest[open + 1..open + 1 + close].to_string())
}

/// `search_tempo_traces` {datasourceUid, query, start, end}.
pub fn search_tempo_traces(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let query = required(args, "query")?;
    let start = time_arg(args, "start")?;
    let end = time_arg(args, "end")?;
    let service = traceql_service(query);
    let traces: Vec<Value> = scenario
        .spec
        .traces
        .iter()
        .filter(|t| service.as_ref().is_none_or(|s| s == &t.service))
        .filter(|t| {
            let at = scenario.time(t.start);
            !(start.is_some_and(|s| at < s) || end.is_some_and(|e| at > e))
        })
        .map(|t| {
            json!({
                "traceID": t.trace_id,
                "rootServiceName": t.service,
                "rootTraceName": t.root_name,
                "startTimeUnixNano": scenario.time(t.start).timestamp_nanos_opt().unwrap_or_default().to_string(),
                "durationMs": t.duration_ms,
            })
        })
        .collect();
    Ok(json!({"traces": traces}).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::path::Path;

    const WORLD: &str = r#"
alert: {text: "x", at: "2025-03-01T12:00:00Z"}
pods:
  - name: api-7c9-x2x7q
    namespace: payments
    node: worker-2
    deployment: api
    containers:
      - name: api
        image: registry/api:1.8.3
        ready: false
        restartCount: 7
        state: {waiting: {reason: CrashLoopBackOff, message: "back-off 5m0s restarting failed container=api"}}
        lastState: {terminated: {exitCode: 78, finishedAt: -1m}}
        resources: {limits: {memory: 256Mi}}
deployments:
  - name: api
    namespace: payments
    replicas: 2
    revisions:
      - {image: "registry/api:1.8.2", created: -3d}
      - {image: "registry/api:1.8.3", created: -20m, change_cause: "deploy 1.8.3"}
events:
  - {type: Warning, reason: BackOff, message: "Back-off restarting failed container api", involvedObject: {kind: Pod, name: api-7c9-x2x7q, namespace: payments}, at: -1m}
  - {reason: Pulled, message: "Pulled image", involvedObject: {kind: Pod, name: other, namespace: payments}, at: -5m}
logs:
  - pod: api-7c9-x2x7q
    previous: "boot\nFATAL: required setting PAYMENT_MODE is not set\n"
metrics:
  - query: 'sum(rate(x[5m]))'
    labels: {service: api}
    step: {before: 0.01, after: 0.35, at: -12m}
expect: {verdict: post}
"#;

    fn scenario() -> Scenario {
        Scenario::parse("t", Path::new("t"), WORLD, Utc::now()).unwrap()
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn pod_yaml_has_sorted_kubernetes_fields() {
        let text = pods_get(
            &scenario(),
            &args(json!({"namespace": "payments", "name": "api-7c9-x2x7q"})),
        )
        .unwrap();
        for needle in [
            "exitCode: 78",
            "reason: CrashLoopBackOff",
            "restartCount: 7",
            "memory: 256Mi",
            "kind: ReplicaSet",
            "nodeName: worker-2",
            "reason: Error",
        ] {
            assert!(text.contains(needle), "{needle} missing in\n{text}");
        }
        assert!(text.find("apiVersion").unwrap() < text.find("kind: Pod").unwrap());
        let error = pods_get(
            &scenario(),
            &args(json!({"namespace": "payments", "name": "nope"})),
        )
        .unwrap_err();
        assert!(error.contains("pods \"nope\" not found"), "{error}");
    }

    #[test]
    fn pods_list_in_namespace_filters_by_label_selector() {
        let s = scenario();
        let all = pods_list_in_namespace(&s, &args(json!({"namespace": "payments"}))).unwrap();
        assert!(all.contains("name: api-7c9-x2x7q"), "{all}");
        let api = pods_list_in_namespace(
            &s,
            &args(json!({"namespace": "payments", "labelSelector": "app=api"})),
        )
        .unwrap();
        assert!(api.contains("name: api-7c9-x2x7q"), "{api}");
        let none = pods_list_in_namespace(
            &s,
            &args(json!({"namespace": "payments", "labelSelector": "job-name=nope"})),
        )
        .unwrap();
        assert!(!none.contains("api-7c9-x2x7q"), "{none}");
        assert!(pods_list_in_namespace(&s, &args(json!({}))).is_err());
    }

    #[test]
    fn previous_log_and_missing_logs() {
        let s = scenario();
        let prev = pods_log(
            &s,
            &args(json!({"namespace": "payments", "name": "api-7c9-x2x7q", "previous": true})),
        )
        .unwrap();
        assert!(prev.contains("FATAL: required setting PAYMENT_MODE is not set"));
        let tail = pods_log(
            &s,
            &args(json!({"name": "api-7c9-x2x7q", "previous": true, "tail": 1})),
        )
        .unwrap();
        assert_eq!(tail, "FATAL: required setting PAYMENT_MODE is not set\n");
        let current = pods_log(
            &s,
            &args(json!({"namespace": "payments", "name": "api-7c9-x2x7q"})),
        )
        .unwrap();
        assert!(
            current.contains("has not logged any message yet"),
            "{current}"
        );
    }

    #[test]
    fn events_filter_by_field_selector_and_render_like_the_real_server() {
        let s = scenario();
        let text = events_list(&s, &args(json!({"namespace": "payments", "fieldSelector": "involvedObject.name=api-7c9-x2x7q"}))).unwrap();
        assert!(text.starts_with("# The following events (YAML format) were found:\n"));
        assert!(
            text.contains("Reason: BackOff") && !text.contains("Pulled"),
            "{text}"
        );
        assert!(text.contains("+0000 UTC"));
        assert_eq!(
            events_list(&s, &args(json!({"namespace": "other"}))).unwrap(),
            "# No events found"
        );
    }

    #[test]
    fn replica_sets_carry_revisions_and_owner() {
        let text = resources_list(
            &scenario(),
            &args(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "payments"})),
        )
        .unwrap();
        assert!(
            text.contains("deployment.kubernetes.io/revision: '2'")
                || text.contains("deployment.kubernetes.io/revision: \"2\""),
            "{text}"
        );
        assert!(
            text.contains("image: registry/api:1.8.2")
                && text.contains("kubernetes.io/change-cause: deploy 1.8.3"),
            "{text}"
        );
    }

    #[test]
    fn range_query_renders_a_prometheus_matrix_with_the_step() {
        let s = scenario();
        let start = Utc.with_ymd_and_hms(2025, 3, 1, 11, 30, 0).unwrap();
        let text = execute_range_query(&s, &args(json!({"query": "sum(rate( x[5m] ))", "start": "2025-03-01T11:30:00Z", "end": "2025-03-01T12:00:00Z", "step": "60s"}))).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["resultType"], "matrix");
        let values = v["result"][0]["values"].as_array().unwrap();
        assert_eq!(values.len(), 31);
        assert_eq!(values[0], json!([start.timestamp(), "0.01"]));
        assert_eq!(values[30][1], "0.35");
        assert_eq!(values[17][1], "0.01", "11:47 is before the step at -12m");
        assert_eq!(values[18][1], "0.35", "11:48 is the step");
        assert_eq!(
            values[18][0],
            json!((start + Duration::minutes(18)).timestamp())
        );
        let none = execute_range_query(
            &s,
            &args(
                json!({"query": "up", "start": "1740830400", "end": "1740830460", "step": "15s"}),
            ),
        )
        .unwrap();
        assert_eq!(none, r#"{"result":[],"resultType":"matrix"}"#);
        assert!(
            execute_range_query(
                &s,
                &args(json!({"query": "up", "start": "0", "end": "1740830460", "step": "1s"}))
            )
            .unwrap_err()
            .contains("11,000")
        );
    }
}
