//! Deployments and their ReplicaSets (one per revision). Status counts left out of the
//! scenario come from the pods: listed pods count as they are, and pods a scenario does not
//! list (fewer listed than `replicas`) count as ready pods of the latest revision.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::pods::{nearest_template, pod_active, pod_ready, pod_template};
use super::{condition, conditions, controller_ref, insert_count, k8s_hash, rfc3339};
use crate::render::world::World;
use crate::scenario::{DeploymentSpec, PodSpec};

/// `spec.selector.matchLabels`: as given, else `{app: <name>}`.
pub(crate) fn selector(deployment: &DeploymentSpec) -> BTreeMap<String, String> {
    deployment
        .selector
        .clone()
        .unwrap_or_else(|| BTreeMap::from([("app".to_string(), deployment.name.clone())]))
}

fn container_name(deployment: &DeploymentSpec) -> String {
    deployment
        .container
        .clone()
        .unwrap_or_else(|| deployment.name.clone())
}

fn active(pods: Vec<&PodSpec>) -> Vec<&PodSpec> {
    pods.into_iter().filter(|p| pod_active(p)).collect()
}

fn ready_count(pods: &[&PodSpec]) -> u32 {
    pods.iter().filter(|p| pod_ready(p)).count() as u32
}

/// The pod template of one revision (numbered from 1), made from the pods the scenario lists:
/// a field that revision's pods set is theirs, a field they leave out is the nearest revision's
/// (a scenario that writes an old revision's pod in brief, or lists none, means it differed only
/// in what it does say), and with no pod at all, a container running the revision's image.
fn revision_template(world: &World, deployment: &DeploymentSpec, number: usize) -> Value {
    let container = container_name(deployment);
    let Some(image) = number
        .checked_sub(1)
        .and_then(|i| deployment.revisions.get(i))
        .map(|r| r.image.as_str())
    else {
        return json!({"containers": [{"name": container, "image": null}]});
    };
    let templates: Vec<Option<Value>> = (1..=deployment.revisions.len())
        .map(|r| {
            world
                .pods_of_revision(deployment, r)
                .first()
                .map(|pod| pod_template(pod, &container, image))
        })
        .collect();
    nearest_template(&templates, number - 1)
        .unwrap_or_else(|| json!({"containers": [{"name": container, "image": image}]}))
}

/// A pod template's `metadata`: its labels, and its annotations when it has any.
pub(crate) fn template_metadata(
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Value {
    let mut metadata = json!({"labels": labels});
    if !annotations.is_empty() {
        metadata["annotations"] = json!(annotations);
    }
    metadata
}

/// The ReplicaSets of a deployment, oldest revision first (a revision's number is its position
/// unless a rollback renumbered it).
pub(crate) fn replica_sets(world: &World, deployment: &DeploymentSpec) -> Vec<Value> {
    let latest = deployment.revisions.len();
    let older: usize = (1..latest)
        .map(|r| active(world.pods_of_revision(deployment, r)).len())
        .sum();
    deployment
        .revisions
        .iter()
        .enumerate()
        .map(|(i, revision)| {
            let number = i + 1;
            let name = world.replica_set_name(deployment, number);
            let hash = world.template_hash(deployment, number);
            let pods = active(world.pods_of_revision(deployment, number));
            let listed = pods.len() as u32;
            // The latest revision runs what the older ones (mid-rollout) do not.
            let replicas = match (number == latest, older) {
                (true, 0) => deployment.replicas,
                (true, _) => deployment.replicas.saturating_sub(older as u32).max(listed),
                (false, _) => listed,
            };
            let ready = ready_count(&pods) + replicas.saturating_sub(listed);
            let mut labels = selector(deployment);
            labels.insert("pod-template-hash".into(), hash.clone());
            let shown = revision.number.unwrap_or(number);
            let mut annotations = Map::new();
            annotations.insert("deployment.kubernetes.io/revision".into(), json!(shown.to_string()));
            if !revision.history.is_empty() {
                let history: Vec<String> = revision.history.iter().map(usize::to_string).collect();
                annotations.insert("deployment.kubernetes.io/revision-history".into(), json!(history.join(",")));
            }
            annotations.insert("deployment.kubernetes.io/desired-replicas".into(), json!(deployment.replicas.to_string()));
            if let Some(cause) = &revision.change_cause {
                annotations.insert("kubernetes.io/change-cause".into(), json!(cause));
            }
            let mut status = Map::new();
            status.insert("replicas".into(), json!(replicas));
            status.insert("observedGeneration".into(), json!(shown));
            insert_count(&mut status, "fullyLabeledReplicas", replicas);
            insert_count(&mut status, "readyReplicas", ready);
            insert_count(&mut status, "availableReplicas", ready);
            json!({
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": name,
                    "namespace": deployment.namespace,
                    "uid": k8s_hash(&format!("uid/{name}"), 16),
                    "creationTimestamp": rfc3339(world.time(revision.created)),
                    "labels": labels,
                    "annotations": annotations,
                    "ownerReferences": [controller_ref("Deployment", &deployment.name, &k8s_hash(&format!("uid/{}", deployment.name), 16))],
                },
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": template_metadata(&labels, &revision.template_annotations),
                        "spec": revision_template(world, deployment, number),
                    },
                },
                "status": status,
            })
        })
        .collect()
}

/// Status counts: the scenario's, else from the pods (unlisted pods ready and up to date).
struct Counts {
    replicas: u32,
    ready: u32,
    available: u32,
    updated: u32,
}

fn counts(world: &World, deployment: &DeploymentSpec) -> Counts {
    let pods = active(world.pods_of("Deployment", &deployment.namespace, &deployment.name));
    let latest = active(world.pods_of_revision(deployment, deployment.revisions.len()));
    let listed = pods.len() as u32;
    let unlisted = deployment.replicas.saturating_sub(listed);
    let given = deployment.status.clone().unwrap_or_default();
    let ready = given
        .ready_replicas
        .unwrap_or(ready_count(&pods) + unlisted);
    Counts {
        replicas: given.replicas.unwrap_or(listed + unlisted),
        ready,
        available: given.available_replicas.unwrap_or(ready),
        updated: given
            .updated_replicas
            .unwrap_or(latest.len() as u32 + unlisted),
    }
}

/// Available and Progressing, as the deployment controller would set them.
fn default_conditions(world: &World, deployment: &DeploymentSpec, counts: &Counts) -> Vec<Value> {
    let max_unavailable = deployment.replicas / 4;
    let available = counts.available + max_unavailable >= deployment.replicas;
    let current = world.replica_set_name(deployment, deployment.revisions.len());
    let progressing = if deployment.paused {
        condition(
            "Progressing",
            "Unknown",
            "DeploymentPaused",
            "Deployment is paused",
        )
    } else if counts.updated >= deployment.replicas && counts.available >= deployment.replicas {
        condition(
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            &format!("ReplicaSet \"{current}\" has successfully progressed."),
        )
    } else {
        condition(
            "Progressing",
            "True",
            "ReplicaSetUpdated",
            &format!("ReplicaSet \"{current}\" is progressing."),
        )
    };
    let mut list = vec![
        if available {
            condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        } else {
            condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        },
        progressing,
    ];
    let since = deployment
        .changed
        .or_else(|| deployment.revisions.last().map(|r| r.created));
    for c in &mut list {
        c.at = since;
    }
    conditions(world, &list, &["lastUpdateTime"])
}

/// The Deployment object.
pub(crate) fn deployment_object(world: &World, deployment: &DeploymentSpec) -> Value {
    // Created with its oldest revision (a rollback moves an old revision last).
    let first = deployment
        .revisions
        .iter()
        .map(|r| world.time(r.created))
        .min();
    let generation = deployment
        .generation
        .unwrap_or(deployment.revisions.len() as u64);
    let current = deployment.revisions.last();
    let revision = current
        .and_then(|r| r.number)
        .unwrap_or(deployment.revisions.len());
    let no_annotations = BTreeMap::new();
    let template_annotations = current.map_or(&no_annotations, |r| &r.template_annotations);
    let selector = selector(deployment);
    let counts = counts(world, deployment);
    let mut status = Map::new();
    status.insert("observedGeneration".into(), json!(generation));
    insert_count(&mut status, "replicas", counts.replicas);
    insert_count(&mut status, "readyReplicas", counts.ready);
    insert_count(&mut status, "availableReplicas", counts.available);
    insert_count(&mut status, "updatedReplicas", counts.updated);
    insert_count(
        &mut status,
        "unavailableReplicas",
        counts.replicas.saturating_sub(counts.available),
    );
    let conditions = if deployment.conditions.is_empty() {
        default_conditions(world, deployment, &counts)
    } else {
        conditions(world, &deployment.conditions, &["lastUpdateTime"])
    };
    status.insert("conditions".into(), Value::Array(conditions));
    let mut spec = json!({
        "replicas": deployment.replicas,
        "selector": {"matchLabels": selector},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
        "template": {
            "metadata": template_metadata(&selector, template_annotations),
            "spec": revision_template(world, deployment, deployment.revisions.len()),
        },
    });
    if deployment.paused {
        spec["paused"] = json!(true);
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": deployment.name,
            "namespace": deployment.namespace,
            "uid": k8s_hash(&format!("uid/{}", deployment.name), 16),
            "generation": generation,
            "creationTimestamp": first.map(rfc3339),
            "annotations": {"deployment.kubernetes.io/revision": revision.to_string()},
            "labels": {"app": deployment.name},
        },
        "spec": spec,
        "status": status,
    })
}
