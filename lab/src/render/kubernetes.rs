//! kubernetes-mcp-server's tools (`pods_get`, `pods_log`, `events_list`, `resources_list`,
//! `resources_get`, `pods_list_in_namespace`): their arguments, their error messages and their
//! text, YAML with sorted keys as the server marshals it with sigs.k8s.io/yaml.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::Rendered;
use super::args::{required, str_arg};
use super::objects::{deployment_object, pod_object, replica_sets};
use super::selector::{field_selector_matches, label_selector_matches};
use crate::scenario::{PodSpec, Scenario};

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
