//! Pods the controllers make after a write, and `pods_delete`.
//!
//! A new pod is made from a pod template (a ReplicaSet's, a StatefulSet's) or is a fresh copy of
//! the pod it replaces: Running and Ready since now, no restarts, nothing in its log. A
//! ReplicaSet's or DaemonSet's pod gets a new name (`<owner>-<5 characters>`, made up
//! deterministically), a StatefulSet's keeps its ordinal name. Pods go to schedulable nodes —
//! the node of the pod they replace, then the nodes their workload used, then the others — or
//! stay Pending when there is none.
//!
//! `pods_delete` removes the pod; a controller (ReplicaSet, StatefulSet, DaemonSet) replaces
//! it, a Job's or a bare pod is simply gone.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::manifest::{scalar_text, string_map};
use super::{Effect, Refusal, Target, WriteTool, Written, event, finish, refusal};
use crate::reltime::RelTime;
use crate::render::objects::k8s_hash;
use crate::render::objects::kinds::by_kind;
use crate::render::world::{PodOwner, World};
use crate::scenario::{Change, ContainerSpec, ContainerStateSpec, PodSpec, RunningSpec, Scenario};

/// The taint a cordoned node carries.
pub(super) const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// Running and ready since `now`, never restarted.
fn running(container: &mut ContainerSpec, now: DateTime<Utc>) {
    container.ready = true;
    container.restart_count = 0;
    container.last_state = None;
    container.state = Some(ContainerStateSpec {
        waiting: None,
        running: Some(RunningSpec {
            started_at: Some(RelTime::Absolute(now)),
        }),
        terminated: None,
    });
}

/// A fresh pod like `old` (same owner, labels and containers), created now.
pub(super) fn fresh(
    old: &PodSpec,
    name: &str,
    node: Option<String>,
    now: DateTime<Utc>,
) -> PodSpec {
    let mut pod = old.clone();
    pod.name = name.to_string();
    pod.node = node;
    pod.ip = None;
    pod.phase = None;
    pod.reason = None;
    pod.message = None;
    pod.created = Some(RelTime::Absolute(now));
    pod.conditions.clear();
    for container in &mut pod.containers {
        running(container, now);
    }
    for init in &mut pod.init_containers {
        // Without a state, an init container completed when the pod was created.
        init.state = None;
        init.last_state = None;
        init.restart_count = 0;
        init.ready = false;
    }
    pod
}

/// A container of a pod template: name, image, resources, the rest verbatim.
fn template_container(value: &Value, field: &str) -> Result<ContainerSpec, String> {
    let fields = value
        .as_object()
        .ok_or_else(|| format!("{field}: must be an object"))?;
    let text = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("{field}.{key}: Required value"))
    };
    let mut container: ContainerSpec =
        serde_json::from_value(json!({"name": text("name")?, "image": text("image")?}))
            .map_err(|e| format!("{field}: {e}"))?;
    if let Some(resources) = fields.get("resources").and_then(Value::as_object) {
        for (class, quantities) in resources {
            let quantities: BTreeMap<String, String> = string_map(Some(quantities));
            container.resources.insert(class.clone(), quantities);
        }
    }
    for (key, value) in fields {
        let default_pull = key == "imagePullPolicy" && value == "IfNotPresent";
        if !matches!(key.as_str(), "name" | "image" | "resources") && !default_pull {
            container.spec_extra.insert(key.clone(), value.clone());
        }
    }
    Ok(container)
}

/// A pod made from a template's `spec`, Running since now on `node` (Pending without one).
pub(super) fn from_template(
    spec: &Value,
    name: &str,
    namespace: &str,
    node: Option<String>,
    now: DateTime<Utc>,
) -> Result<PodSpec, String> {
    let fields = spec
        .as_object()
        .ok_or("spec.template.spec: Required value")?;
    let mut pod: PodSpec =
        serde_json::from_value(json!({"name": name, "namespace": namespace, "containers": []}))
            .map_err(|e| e.to_string())?;
    let list = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let containers = list("containers");
    if containers.is_empty() {
        return Err("spec.template.spec.containers: Required value".into());
    }
    for (i, c) in containers.iter().enumerate() {
        let mut container = template_container(c, &format!("spec.template.spec.containers[{i}]"))?;
        running(&mut container, now);
        pod.containers.push(container);
    }
    for (i, c) in list("initContainers").iter().enumerate() {
        let mut init = template_container(c, &format!("spec.template.spec.initContainers[{i}]"))?;
        init.ready = false;
        pod.init_containers.push(init);
    }
    for (key, value) in fields {
        if !matches!(key.as_str(), "containers" | "initContainers" | "nodeName") {
            pod.spec_extra.insert(key.clone(), value.clone());
        }
    }
    pod.node = node;
    pod.created = Some(RelTime::Absolute(now));
    Ok(pod)
}

/// The labels and annotations a template gives its pods (`pod-template-hash` aside: the
/// controller sets it).
pub(super) fn template_metadata(
    template: &Value,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut labels = string_map(template.pointer("/metadata/labels"));
    labels.remove("pod-template-hash");
    let annotations = string_map(template.pointer("/metadata/annotations"));
    (labels, annotations)
}

/// `<prefix>-<5 characters>`, not taken by a pod of the namespace; deterministic for a given
/// world and seed.
pub(super) fn unique_name(world: &Scenario, namespace: &str, prefix: &str, seed: &str) -> String {
    let taken = |name: &str| {
        world
            .spec
            .pods
            .iter()
            .any(|p| p.namespace == namespace && p.name == name)
    };
    for attempt in 0..64u32 {
        let salt = format!("{prefix}/{seed}/{}/{attempt}", world.spec.live.counter);
        let name = format!("{prefix}-{}", k8s_hash(&salt, 5));
        if !taken(&name) {
            return name;
        }
    }
    format!("{prefix}-{}", world.spec.pods.len())
}

/// Whether the scheduler may place a pod on `node`: not cordoned, Ready.
fn schedulable(world: &Scenario, node: &str) -> bool {
    world
        .spec
        .nodes
        .iter()
        .find(|n| n.name == node)
        .is_none_or(|n| {
            !n.unschedulable
                && !n.taints.iter().any(|t| t.key == UNSCHEDULABLE_TAINT)
                && n.conditions
                    .iter()
                    .all(|c| c.kind != "Ready" || c.status == "True")
        })
}

/// Schedulable nodes, `preferred` first (in order), then every other node of the world.
pub(super) fn schedulable_nodes(world: &Scenario, preferred: &[Option<String>]) -> Vec<String> {
    let all = World::new(world).node_names();
    let mut out: Vec<String> = Vec::new();
    for name in preferred.iter().flatten().chain(all.iter()) {
        if schedulable(world, name) && !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// The `i`th new pod's node: round robin over `nodes`, none when there is none.
pub(super) fn nth_node(nodes: &[String], i: usize) -> Option<String> {
    (!nodes.is_empty()).then(|| nodes[i % nodes.len()].clone())
}

/// Removes pods of `namespace` by name, and the logs no remaining pod of that name has.
pub(super) fn remove(world: &mut Scenario, namespace: &str, names: &[String]) {
    world
        .spec
        .pods
        .retain(|p| !(p.namespace == namespace && names.contains(&p.name)));
    let remaining: Vec<String> = world.spec.pods.iter().map(|p| p.name.clone()).collect();
    world
        .spec
        .logs
        .retain(|l| !names.contains(&l.pod) || remaining.contains(&l.pod));
}

/// The replacement its controller makes for a deleted pod (added to the world), by name.
fn replace(world: &mut Scenario, old: &PodSpec, now: DateTime<Utc>) -> Option<String> {
    let (kind, owner, same_name) = {
        let view = World::new(world);
        match view.owner(old)? {
            PodOwner::Revision {
                deployment,
                revision,
            } => (
                "ReplicaSet".to_string(),
                view.replica_set_name(deployment, revision),
                false,
            ),
            PodOwner::Controller { kind, name } => match kind {
                "ReplicaSet" | "DaemonSet" => (kind.to_string(), name.to_string(), false),
                "StatefulSet" => (kind.to_string(), name.to_string(), true),
                _ => return None,
            },
        }
    };
    let name = if same_name {
        old.name.clone()
    } else {
        unique_name(world, &old.namespace, &owner, &old.name)
    };
    // A DaemonSet's pod belongs to its node; the others go where the scheduler puts them.
    let node = if kind == "DaemonSet" {
        old.node.clone()
    } else {
        nth_node(
            &schedulable_nodes(world, std::slice::from_ref(&old.node)),
            0,
        )
    };
    world.spec.pods.push(fresh(old, &name, node, now));
    let message = if kind == "StatefulSet" {
        format!("create Pod {name} in StatefulSet {owner} successful")
    } else {
        format!("Created pod: {name}")
    };
    event(
        world,
        "SuccessfulCreate",
        message,
        (&kind, &owner, Some(&old.namespace)),
        now,
    );
    Some(name)
}

/// `pods_delete` {name, namespace}: "Pod deleted successfully", the pod replaced by its
/// controller.
pub(super) fn pods_delete(
    world: &Scenario,
    args: &Map<String, Value>,
    now: DateTime<Utc>,
    forbidden: Refusal,
) -> Result<Written, String> {
    let name = args
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or("failed to delete pod, missing argument name")?;
    let namespace = args
        .get("namespace")
        .and_then(scalar_text)
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".into());
    let failed =
        |why: String| format!("failed to delete pod {name} in namespace {namespace}: {why}");
    if let (Some(user), Some(pods)) = (forbidden, by_kind("v1", "Pod")) {
        return Err(failed(refusal::forbidden(
            user,
            "delete",
            pods,
            None,
            name,
            Some(&namespace),
        )));
    }
    let Some(old) = world
        .spec
        .pods
        .iter()
        .find(|p| p.name == name && p.namespace == namespace)
        .cloned()
    else {
        return Err(failed(format!("pods \"{name}\" not found")));
    };
    let mut next = world.clone();
    remove(&mut next, &namespace, std::slice::from_ref(&old.name));
    let created: Vec<String> = replace(&mut next, &old, now).into_iter().collect();
    let target = Target {
        api_version: "v1".into(),
        kind: "Pod".into(),
        namespace: Some(namespace.clone()),
        name: name.to_string(),
    };
    let effect = Effect {
        change: Change::Delete,
        created,
    };
    let changed = finish(
        world,
        next,
        WriteTool::PodsDelete,
        target,
        effect,
        None,
        now,
    );
    Ok(Written {
        text: "Pod deleted successfully".into(),
        changed,
    })
}
