//! Scaling a Deployment or a StatefulSet (`resources_scale`, or a changed `spec.replicas` in an
//! applied object), finished at once:
//!
//! - a Deployment adds pods of its current ReplicaSet, or removes pods (older revisions first,
//!   then unready ones, then the newest) — pods a scenario does not list count as running ones
//!   (see `render::objects`), so only the difference the listed pods do not cover is created;
//! - a StatefulSet adds the missing ordinals below the new scale, or removes the highest.
//!
//! `resources_scale` without `scale` only answers the current scale: kubernetes-mcp-server's
//! `# Current resource scale (YAML) is below` and the autoscaling/v1 Scale object.

use std::cmp::Reverse;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::manifest::scalar_text;
use super::pods::{from_template, nth_node, remove, schedulable_nodes, template_metadata};
use super::restart::ordinal;
use super::rollout::{create_deployment_pods, freeze};
use super::{Effect, Refusal, Target, WriteTool, Written, event, finish, refusal};
use crate::reltime::RelTime;
use crate::render::objects::kinds::by_kind;
use crate::render::objects::{Kind, pod_active, pod_ready, replica_sets, statefulset_object};
use crate::render::to_yaml;
use crate::render::world::{PodOwner, World};
use crate::scenario::{Change, OwnerSpec, Scenario};

/// A listed pod of a Deployment, as scaling down ranks it.
struct Listed {
    name: String,
    node: Option<String>,
    current: bool,
    ready: bool,
    created: DateTime<Utc>,
    replica_set: String,
}

/// Scales the Deployment `index` to `replicas`: the pods created, `None` when it already has
/// that scale.
pub(super) fn deployment(
    world: &mut Scenario,
    index: usize,
    replicas: u32,
    now: DateTime<Utc>,
) -> Result<Option<Vec<String>>, String> {
    let from = world.spec.deployments[index].replicas;
    if from == replicas {
        return Ok(None);
    }
    freeze(world, index);
    let (name, namespace, template, current_set, mut listed) = {
        let view = World::new(world);
        let deployment = &world.spec.deployments[index];
        let latest = deployment.revisions.len();
        let sets = replica_sets(&view, deployment);
        let template = sets
            .last()
            .map(|s| s["spec"]["template"].clone())
            .unwrap_or(Value::Null);
        let listed: Vec<Listed> = view
            .pods_of("Deployment", &deployment.namespace, &deployment.name)
            .into_iter()
            .filter(|p| pod_active(p))
            .map(|p| {
                let (current, replica_set) = match view.owner(p) {
                    Some(PodOwner::Revision {
                        deployment,
                        revision,
                    }) => (
                        revision == latest,
                        view.replica_set_name(deployment, revision),
                    ),
                    _ => (false, String::new()),
                };
                Listed {
                    name: p.name.clone(),
                    node: p.node.clone(),
                    current,
                    ready: pod_ready(p),
                    created: view.pod_created(p),
                    replica_set,
                }
            })
            .collect();
        (
            deployment.name.clone(),
            deployment.namespace.clone(),
            template,
            view.replica_set_name(deployment, latest),
            listed,
        )
    };
    let count = listed.len() as u32;
    let mut created = Vec::new();
    if replicas > from {
        let add = replicas.saturating_sub(from.max(count)) as usize;
        let nodes: Vec<Option<String>> = listed.iter().map(|p| p.node.clone()).collect();
        created = create_deployment_pods(world, index, &template, add, &nodes, now)?;
    } else {
        // Older revisions first, then unready pods, then the newest.
        listed.sort_by_key(|p| (p.current, p.ready, Reverse(p.created)));
        let drop = count.saturating_sub(replicas) as usize;
        let victims: Vec<&Listed> = listed.iter().take(drop).collect();
        let names: Vec<String> = victims.iter().map(|p| p.name.clone()).collect();
        remove(world, &namespace, &names);
        for pod in victims {
            let message = format!("Deleted pod: {}", pod.name);
            let set = (
                "ReplicaSet",
                pod.replica_set.as_str(),
                Some(namespace.as_str()),
            );
            event(world, "SuccessfulDelete", message, set, now);
        }
    }
    let direction = if replicas > from { "up" } else { "down" };
    event(
        world,
        "ScalingReplicaSet",
        format!("Scaled {direction} replica set {current_set} to {replicas} from {from}"),
        ("Deployment", &name, Some(&namespace)),
        now,
    );
    let deployment = &mut world.spec.deployments[index];
    let generation = deployment
        .generation
        .unwrap_or(deployment.revisions.len() as u64);
    deployment.generation = Some(generation + 1);
    deployment.replicas = replicas;
    deployment.status = None;
    deployment.conditions.clear();
    deployment.changed = Some(RelTime::Absolute(now));
    Ok(Some(created))
}

/// Scales the StatefulSet `index` to `replicas`: the pods created, `None` when it already has
/// that scale.
pub(super) fn statefulset(
    world: &mut Scenario,
    index: usize,
    replicas: u32,
    now: DateTime<Utc>,
) -> Result<Option<Vec<String>>, String> {
    let from = world.spec.statefulsets[index].replicas;
    if from == replicas {
        return Ok(None);
    }
    let (name, namespace, template, pods) = {
        let view = World::new(world);
        let set = &world.spec.statefulsets[index];
        let template = statefulset_object(&view, set)["spec"]["template"].clone();
        let pods: Vec<(String, Option<String>)> = view
            .pods_of("StatefulSet", &set.namespace, &set.name)
            .iter()
            .map(|p| (p.name.clone(), p.node.clone()))
            .collect();
        (set.name.clone(), set.namespace.clone(), template, pods)
    };
    let set_ref = ("StatefulSet", name.as_str(), Some(namespace.as_str()));
    let mut created = Vec::new();
    if replicas > from {
        let preferred: Vec<Option<String>> = pods.iter().map(|(_, n)| n.clone()).collect();
        let nodes = schedulable_nodes(world, &preferred);
        let (labels, annotations) = template_metadata(&template);
        let spec = template.get("spec").unwrap_or(&Value::Null);
        for ord in from..replicas {
            let pod_name = format!("{name}-{ord}");
            if pods.iter().any(|(n, _)| *n == pod_name) {
                continue;
            }
            let node = nth_node(&nodes, ord as usize);
            let mut pod = from_template(spec, &pod_name, &namespace, node, now)?;
            pod.owner = Some(OwnerSpec {
                kind: "StatefulSet".into(),
                name: name.clone(),
            });
            pod.labels = labels.clone();
            pod.annotations = annotations.clone();
            world.spec.pods.push(pod);
            let message = format!("create Pod {pod_name} in StatefulSet {name} successful");
            event(world, "SuccessfulCreate", message, set_ref, now);
            created.push(pod_name);
        }
    } else {
        let mut victims: Vec<String> = pods
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| ordinal(n).is_some_and(|o| o >= replicas))
            .collect();
        victims.sort_by_key(|n| Reverse(ordinal(n)));
        remove(world, &namespace, &victims);
        for pod in &victims {
            let message = format!("delete Pod {pod} in StatefulSet {name} successful");
            event(world, "SuccessfulDelete", message, set_ref, now);
        }
    }
    let set = &mut world.spec.statefulsets[index];
    set.generation = Some(set.generation.unwrap_or(1) + 1);
    set.replicas = replicas;
    if let Some(status) = &mut set.status {
        status.replicas = None;
        status.ready_replicas = None;
        status.current_replicas = None;
        status.updated_replicas = None;
    }
    Ok(Some(created))
}

/// The autoscaling/v1 Scale of a served workload object.
fn scale_object(object: &Value) -> Value {
    let selector: Vec<String> = object
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    let metadata = &object["metadata"];
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "uid": metadata["uid"],
            "resourceVersion": metadata["resourceVersion"],
            "creationTimestamp": metadata["creationTimestamp"],
        },
        "spec": {"replicas": object["spec"]["replicas"]},
        "status": {
            "replicas": object["status"]["replicas"].as_u64().unwrap_or(0),
            "selector": selector.join(","),
        },
    })
}

/// The served object `namespace/name` of `kind` in `world`.
fn served(world: &Scenario, kind: &Kind, namespace: &str, name: &str) -> Option<Value> {
    kind.build(&World::new(world))
        .into_iter()
        .find(|o| o["metadata"]["name"] == name && o["metadata"]["namespace"] == namespace)
}

/// `resources_scale` {apiVersion, kind, name, namespace, scale}.
pub(super) fn resources_scale(
    world: &Scenario,
    args: &Map<String, Value>,
    now: DateTime<Utc>,
    forbidden: Refusal,
) -> Result<Written, String> {
    let failed = |why: String| format!("failed to get/update resource scale: {why}");
    let arg = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("failed to get/update resource scale, missing argument {key}"))
    };
    let (api_version, kind, name) = (arg("apiVersion")?, arg("kind")?, arg("name")?);
    let namespace = args
        .get("namespace")
        .and_then(scalar_text)
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".into());
    let Some(served_kind) = by_kind(api_version, kind) else {
        return Err(failed(format!(
            "no matches for kind \"{kind}\" in version \"{api_version}\""
        )));
    };
    let scale = match args.get("scale") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            scalar_text(value)
                .and_then(|t| t.parse::<i64>().ok())
                .ok_or_else(|| failed(format!("invalid scale {value}: must be an integer")))?,
        ),
    };
    if let (Some(_), Some(user)) = (scale, forbidden) {
        return Err(failed(refusal::forbidden(
            user,
            "update",
            served_kind,
            Some("scale"),
            name,
            Some(&namespace),
        )));
    }
    let index = match served_kind.kind {
        "Deployment" => world
            .spec
            .deployments
            .iter()
            .position(|d| d.name == name && d.namespace == namespace),
        "StatefulSet" => world
            .spec
            .statefulsets
            .iter()
            .position(|s| s.name == name && s.namespace == namespace),
        _ => {
            return Err(failed(
                "the server could not find the requested resource".into(),
            ));
        }
    };
    let Some(index) = index else {
        return Err(failed(format!(
            "{} \"{name}\" not found",
            served_kind.qualified()
        )));
    };
    let changed = match scale {
        None => None,
        Some(n) => {
            let replicas = u32::try_from(n).map_err(|_| {
                failed(format!(
                    "Scale.autoscaling \"{name}\" is invalid: spec.replicas: Invalid value: {n}: must be greater than or equal to 0"
                ))
            })?;
            let mut next = world.clone();
            let created = if served_kind.kind == "Deployment" {
                deployment(&mut next, index, replicas, now)
            } else {
                statefulset(&mut next, index, replicas, now)
            }
            .map_err(failed)?;
            created.and_then(|created| {
                let target = Target {
                    api_version: served_kind.api_version.to_string(),
                    kind: served_kind.kind.to_string(),
                    namespace: Some(namespace.clone()),
                    name: name.to_string(),
                };
                let effect = Effect {
                    change: Change::Scale,
                    created,
                };
                finish(world, next, WriteTool::Scale, target, effect, None, now)
            })
        }
    };
    let shown = changed.as_ref().map_or(world, |(w, _)| w);
    let object = served(shown, served_kind, &namespace, name)
        .ok_or_else(|| failed(format!("{} \"{name}\" not found", served_kind.qualified())))?;
    Ok(Written {
        text: format!(
            "# Current resource scale (YAML) is below\n{}",
            to_yaml(&scale_object(&object))
        ),
        changed,
    })
}
