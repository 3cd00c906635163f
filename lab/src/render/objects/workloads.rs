//! StatefulSets and DaemonSets. Like Deployments, status counts left out come from the pods
//! they own, and pods a scenario does not list (fewer than `replicas` / `desired`) count as
//! ready and up to date.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value, json};

use super::deployments::template_metadata;
use super::pods::{pod_active, pod_ready};
use super::{conditions, insert_count, insert_some, k8s_hash, rfc3339, template_spec, uid};
use crate::render::world::World;
use crate::scenario::{DaemonSetSpec, PodSpec, StatefulSetSpec};

fn default_selector(
    given: Option<&BTreeMap<String, String>>,
    name: &str,
) -> BTreeMap<String, String> {
    given
        .cloned()
        .unwrap_or_else(|| BTreeMap::from([("app".to_string(), name.to_string())]))
}

/// The selector of the StatefulSet a pod names (`{app: <name>}` by default).
pub(crate) fn statefulset_selector(
    world: &World,
    namespace: &str,
    name: &str,
) -> BTreeMap<String, String> {
    let given = world
        .spec
        .statefulsets
        .iter()
        .find(|s| s.name == name && s.namespace == namespace)
        .and_then(|s| s.selector.as_ref());
    default_selector(given, name)
}

/// The selector of the DaemonSet a pod names (`{app: <name>}` by default).
pub(crate) fn daemonset_selector(
    world: &World,
    namespace: &str,
    name: &str,
) -> BTreeMap<String, String> {
    let given = world
        .spec
        .daemonsets
        .iter()
        .find(|d| d.name == name && d.namespace == namespace)
        .and_then(|d| d.selector.as_ref());
    default_selector(given, name)
}

/// Created with its oldest pod, and at least a month before the alert.
fn created(world: &World, pods: &[&PodSpec]) -> DateTime<Utc> {
    pods.iter()
        .map(|p| world.pod_created(p))
        .chain([world.scenario.alert_at - Duration::days(30)])
        .min()
        .unwrap_or(world.scenario.alert_at)
}

/// Who a workload is: kind, namespace, name, and its `metadata.generation`.
struct Identity<'a> {
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
    generation: u64,
}

fn metadata(
    world: &World,
    who: &Identity,
    labels: &BTreeMap<String, String>,
    pods: &[&PodSpec],
) -> Value {
    let Identity {
        kind,
        namespace,
        name,
        generation,
    } = *who;
    json!({
        "name": name,
        "namespace": namespace,
        "uid": uid(kind, namespace, name),
        "generation": generation,
        "creationTimestamp": rfc3339(created(world, pods)),
        "labels": labels,
    })
}

/// The StatefulSet object.
pub(crate) fn statefulset_object(world: &World, set: &StatefulSetSpec) -> Value {
    let all = world.pods_of("StatefulSet", &set.namespace, &set.name);
    let pods: Vec<&PodSpec> = all.iter().copied().filter(|p| pod_active(p)).collect();
    let selector = default_selector(set.selector.as_ref(), &set.name);
    let listed = pods.len() as u32;
    let unlisted = set.replicas.saturating_sub(listed);
    let given = set.status.clone().unwrap_or_default();
    let replicas = given.replicas.unwrap_or(listed + unlisted);
    let ready = given
        .ready_replicas
        .unwrap_or(pods.iter().filter(|p| pod_ready(p)).count() as u32 + unlisted);
    let revision = format!("{}-{}", set.name, k8s_hash(&set.name, 10));
    let generation = set.generation.unwrap_or(1);
    let mut status = Map::new();
    status.insert("observedGeneration".into(), json!(generation));
    status.insert("replicas".into(), json!(replicas));
    insert_count(&mut status, "readyReplicas", ready);
    insert_count(&mut status, "availableReplicas", ready);
    insert_count(
        &mut status,
        "currentReplicas",
        given.current_replicas.unwrap_or(replicas),
    );
    insert_count(
        &mut status,
        "updatedReplicas",
        given.updated_replicas.unwrap_or(replicas),
    );
    status.insert(
        "currentRevision".into(),
        json!(given.current_revision.unwrap_or_else(|| revision.clone())),
    );
    status.insert(
        "updateRevision".into(),
        json!(given.update_revision.unwrap_or(revision)),
    );
    if !set.conditions.is_empty() {
        status.insert(
            "conditions".into(),
            Value::Array(conditions(world, &set.conditions, &[])),
        );
    }
    let claims: Vec<Value> = set
        .volume_claim_templates
        .iter()
        .map(|t| {
            let mut spec = Map::new();
            spec.insert("accessModes".into(), json!(["ReadWriteOnce"]));
            spec.insert("resources".into(), json!({"requests": {"storage": t.size}}));
            spec.insert("volumeMode".into(), json!("Filesystem"));
            insert_some(&mut spec, "storageClassName", t.storage_class.as_ref());
            json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": t.name}, "spec": spec,
            })
        })
        .collect();
    let mut spec = json!({
        "replicas": set.replicas,
        "selector": {"matchLabels": selector},
        "serviceName": set.name,
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "template": {
            "metadata": template_metadata(&selector, &set.template_annotations),
            "spec": template_spec(&all, set.image.as_deref(), &set.name),
        },
    });
    if !claims.is_empty() {
        spec["volumeClaimTemplates"] = Value::Array(claims);
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata(world, &Identity { kind: "StatefulSet", namespace: &set.namespace, name: &set.name, generation }, &selector, &all),
        "spec": spec,
        "status": status,
    })
}

/// The DaemonSet object.
pub(crate) fn daemonset_object(world: &World, set: &DaemonSetSpec) -> Value {
    let all = world.pods_of("DaemonSet", &set.namespace, &set.name);
    let pods: Vec<&PodSpec> = all.iter().copied().filter(|p| pod_active(p)).collect();
    let selector = default_selector(set.selector.as_ref(), &set.name);
    let listed = pods.len() as u32;
    let desired = set.desired.unwrap_or(listed);
    let unlisted = desired.saturating_sub(listed);
    let given = set.status.clone().unwrap_or_default();
    let desired = given.desired_number_scheduled.unwrap_or(desired);
    let ready = given
        .number_ready
        .unwrap_or(pods.iter().filter(|p| pod_ready(p)).count() as u32 + unlisted);
    let generation = set.generation.unwrap_or(1);
    let mut status = Map::new();
    status.insert("observedGeneration".into(), json!(generation));
    status.insert("desiredNumberScheduled".into(), json!(desired));
    status.insert(
        "currentNumberScheduled".into(),
        json!(given.current_number_scheduled.unwrap_or(listed + unlisted)),
    );
    status.insert(
        "numberMisscheduled".into(),
        json!(given.number_misscheduled.unwrap_or(0)),
    );
    status.insert("numberReady".into(), json!(ready));
    insert_count(&mut status, "numberAvailable", ready);
    insert_count(
        &mut status,
        "numberUnavailable",
        given
            .number_unavailable
            .unwrap_or(desired.saturating_sub(ready)),
    );
    insert_count(
        &mut status,
        "updatedNumberScheduled",
        given.updated_number_scheduled.unwrap_or(listed + unlisted),
    );
    if !set.conditions.is_empty() {
        status.insert(
            "conditions".into(),
            Value::Array(conditions(world, &set.conditions, &[])),
        );
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(world, &Identity { kind: "DaemonSet", namespace: &set.namespace, name: &set.name, generation }, &selector, &all),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "revisionHistoryLimit": 10,
            "template": {
                "metadata": template_metadata(&selector, &set.template_annotations),
                "spec": template_spec(&all, set.image.as_deref(), &set.name),
            },
        },
        "status": status,
    })
}
