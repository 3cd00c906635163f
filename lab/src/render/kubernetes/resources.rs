//! `resources_list`, `resources_get` and `namespaces_list` over every kind the lab serves
//! (`objects::kinds`). A known API group without the kind in the world lists nothing; an
//! unknown group or a missing object is the real server's error text.

use serde_json::{Map, Value};

use super::to_yaml;
use crate::render::Rendered;
use crate::render::args::{required, str_arg};
use crate::render::objects::kinds::by_kind;
use crate::render::selector::object_matches;
use crate::render::world::World;
use crate::scenario::Scenario;

/// Real API groups the lab answers for even when it serves none of the asked kind.
const KNOWN_GROUPS: &[&str] = &[
    "v1",
    "apps/v1",
    "batch/v1",
    "networking.k8s.io/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "storage.k8s.io/v1",
    "policy/v1",
];

/// `Ingress` → `ingresses`: how Kubernetes names resources, for kinds the lab does not serve.
fn plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else if lower.ends_with('s') || lower.ends_with('x') || lower.ends_with("ch") {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// The objects of a kind in `namespace` (every one when `None` or the kind is cluster-scoped),
/// or the error for an unknown group (`verb`: `list resources` / `get resource`).
fn objects(
    scenario: &Scenario,
    args: &Map<String, Value>,
    verb: &str,
) -> Result<(String, Vec<Value>), String> {
    let api_version = required(args, "apiVersion")?;
    let kind = required(args, "kind")?;
    let namespace = str_arg(args, "namespace");
    match by_kind(api_version, kind) {
        Some(served) => {
            let items = served
                .build(&World::new(scenario))
                .into_iter()
                .filter(|o| {
                    !served.namespaced
                        || namespace.is_none_or(|ns| o["metadata"]["namespace"] == ns)
                })
                .collect();
            Ok((served.qualified(), items))
        }
        None if KNOWN_GROUPS.contains(&api_version) => {
            let qualified = match api_version.split_once('/') {
                Some((group, _)) => format!("{}.{group}", plural(kind)),
                None => plural(kind),
            };
            Ok((qualified, Vec::new()))
        }
        None => Err(format!(
            "failed to {verb}: no matches for kind \"{kind}\" in version \"{api_version}\""
        )),
    }
}

/// `resources_list` {apiVersion, kind, namespace, labelSelector, fieldSelector}.
pub fn resources_list(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let labels = str_arg(args, "labelSelector");
    let fields = str_arg(args, "fieldSelector");
    let (_, items) = objects(scenario, args, "list resources")?;
    let items: Vec<Value> = items
        .into_iter()
        .filter(|o| object_matches(o, labels, fields))
        .collect();
    Ok(to_yaml(&Value::Array(items)))
}

/// `resources_get` {apiVersion, kind, namespace, name}.
pub fn resources_get(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let name = required(args, "name")?;
    let (qualified, items) = objects(scenario, args, "get resource")?;
    items
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
        .map(|o| to_yaml(&o))
        .ok_or_else(|| format!("failed to get resource: {qualified} \"{name}\" not found"))
}

/// `namespaces_list` {}: every namespace of the world as YAML.
pub fn namespaces_list(scenario: &Scenario, _args: &Map<String, Value>) -> Rendered {
    let mut args = Map::new();
    args.insert("apiVersion".into(), Value::from("v1"));
    args.insert("kind".into(), Value::from("Namespace"));
    resources_list(scenario, &args)
}
