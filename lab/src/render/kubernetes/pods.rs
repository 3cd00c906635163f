//! `pods_get`, `pods_list_in_namespace`, `pods_list` and `pods_log`, with
//! kubernetes-mcp-server's (and the kubelet's) error texts.

use serde_json::{Map, Value};

use super::to_yaml;
use crate::render::Rendered;
use crate::render::args::{required, str_arg};
use crate::render::objects::{init_finished, pod_object};
use crate::render::selector::object_matches;
use crate::render::world::World;
use crate::scenario::{PodSpec, Scenario};

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
    Ok(to_yaml(&pod_object(&World::new(scenario), pod)))
}

/// The pods in `namespace` (all when `None`) that pass the call's selectors, as a YAML list.
fn list(scenario: &Scenario, namespace: Option<&str>, args: &Map<String, Value>) -> Rendered {
    let world = World::new(scenario);
    let labels = str_arg(args, "labelSelector");
    let fields = str_arg(args, "fieldSelector");
    let items: Vec<Value> = scenario
        .spec
        .pods
        .iter()
        .filter(|p| namespace.is_none_or(|ns| p.namespace == ns))
        .map(|p| pod_object(&world, p))
        .filter(|o| object_matches(o, labels, fields))
        .collect();
    Ok(to_yaml(&Value::Array(items)))
}

/// `pods_list_in_namespace` {namespace, labelSelector, fieldSelector}: the matching Pods as YAML.
pub fn pods_list_in_namespace(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let namespace = required(args, "namespace")?;
    list(scenario, Some(namespace), args)
}

/// `pods_list` {labelSelector, fieldSelector}: the matching Pods of every namespace as YAML.
pub fn pods_list(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    list(scenario, None, args)
}

/// `pods_log` {namespace, name, container, previous, tail}; an init container by its name.
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
    let container = log_container(pod, str_arg(args, "container"))
        .and_then(|c| match (previous, initializing(pod, &c)) {
            (false, Some(waiting)) => Err(waiting),
            _ => Ok(c),
        })
        .map_err(|e| format!("failed to get pod {name} log in namespace {ns_shown}: {e}"))?;
    let text = match log_text(scenario, pod, &container, previous) {
        Some(text) => text,
        None => {
            return Err(format!(
                "failed to get pod {name} log in namespace {ns_shown}: previous terminated container \"{container}\" in pod \"{name}\" not found"
            ));
        }
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

/// The container a log request means, or the API server's complaint: the named one (a
/// container or an init container), else the pod's only container.
pub(crate) fn log_container(pod: &PodSpec, named: Option<&str>) -> Result<String, String> {
    match named {
        Some(c)
            if pod
                .containers
                .iter()
                .chain(&pod.init_containers)
                .any(|pc| pc.name == c) =>
        {
            Ok(c.to_string())
        }
        Some(c) => Err(format!("container {c} is not valid for pod {}", pod.name)),
        None => match pod.containers.as_slice() {
            [only] => Ok(only.name.clone()),
            _ => Err(choose_container(pod)),
        },
    }
}

/// The API server's answer for the current log of a container that cannot have started because
/// the pod's init containers have not finished.
pub(crate) fn initializing(pod: &PodSpec, container: &str) -> Option<String> {
    let main = pod.containers.iter().any(|c| c.name == container);
    (main && !init_finished(pod)).then(|| {
        format!(
            "container \"{container}\" in pod \"{}\" is waiting to start: PodInitializing",
            pod.name
        )
    })
}

/// The API server's answer to a log request without a container, for a pod with several.
fn choose_container(pod: &PodSpec) -> String {
    let names = |list: &[crate::scenario::ContainerSpec]| {
        list.iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut message = format!(
        "a container name must be specified for pod {}, choose one of: [{}]",
        pod.name,
        names(&pod.containers)
    );
    if !pod.init_containers.is_empty() {
        message.push_str(&format!(
            " or one of the init containers: [{}]",
            names(&pod.init_containers)
        ));
    }
    message
}

/// The container's current log (empty when none is recorded), or its previous one (`None` when
/// there is no previous instance).
pub(crate) fn log_text<'a>(
    scenario: &'a Scenario,
    pod: &PodSpec,
    container: &str,
    previous: bool,
) -> Option<&'a str> {
    let log = scenario.spec.logs.iter().find(|l| {
        l.pod == pod.name
            && l.container
                .as_deref()
                .or(pod.containers.first().map(|c| c.name.as_str()))
                == Some(container)
    });
    if previous {
        log.and_then(|l| l.previous.as_deref())
    } else {
        Some(log.and_then(|l| l.current.as_deref()).unwrap_or(""))
    }
}
