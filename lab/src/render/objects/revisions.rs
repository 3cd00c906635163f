//! A StatefulSet's ControllerRevisions: one per pod template it has run, as the controller keeps
//! them (`kubectl rollout history statefulset/…` reads them). Each revision is the template of
//! the pods labelled with its name (`controller-revision-hash`), oldest first: the status's
//! `currentRevision` before its `updateRevision`. A field one revision's pods leave out is the
//! other's (a scenario writes an old pod in brief), and a claim volume of the set's own
//! `volumeClaimTemplates` is the pod's, not the template's.

use serde_json::{Value, json};

use super::pods::{nearest_template, pod_template};
use super::{controller_ref, rfc3339, uid};
use crate::render::world::World;
use crate::scenario::{PodSpec, StatefulSetSpec};

const REVISION_LABEL: &str = "controller-revision-hash";

/// The set's revision names, oldest first.
fn revision_names(set: &StatefulSetSpec, pods: &[&PodSpec]) -> Vec<String> {
    let status = set.status.clone().unwrap_or_default();
    let mut names: Vec<String> = Vec::new();
    let labelled = pods
        .iter()
        .filter_map(|p| p.labels.get(REVISION_LABEL).cloned());
    for name in status
        .current_revision
        .into_iter()
        .chain(labelled)
        .chain(status.update_revision)
    {
        names.retain(|n| *n != name);
        names.push(name);
    }
    names
}

/// The template of `pod`, without its own claims (those of the set's claim templates).
fn template_of(set: &StatefulSetSpec, pod: &PodSpec) -> Value {
    let (container, image) = pod
        .containers
        .first()
        .map_or(("", ""), |c| (c.name.as_str(), c.image.as_str()));
    let mut template = pod_template(pod, container, image);
    if let Some(Value::Array(volumes)) = template.get_mut("volumes") {
        volumes.retain(|v| {
            let claim = v.pointer("/persistentVolumeClaim/claimName");
            !set.volume_claim_templates.iter().any(|t| {
                claim.and_then(Value::as_str) == Some(format!("{}-{}", t.name, pod.name).as_str())
            })
        });
    }
    template
}

/// The ControllerRevisions of a StatefulSet: none unless its pods show at least one revision.
pub(crate) fn controller_revisions(world: &World, set: &StatefulSetSpec) -> Vec<Value> {
    let pods = world.pods_of("StatefulSet", &set.namespace, &set.name);
    let names = revision_names(set, &pods);
    let of = |name: &str| -> Vec<&PodSpec> {
        pods.iter()
            .copied()
            .filter(|p| p.labels.get(REVISION_LABEL).map(String::as_str) == Some(name))
            .collect()
    };
    let templates: Vec<Option<Value>> = names
        .iter()
        .map(|name| of(name).first().map(|p| template_of(set, p)))
        .collect();
    names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            templates[i].as_ref()?;
            let template = nearest_template(&templates, i)?;
            let created = of(name).iter().map(|p| world.pod_created(p)).min()?;
            let hash = name.rsplit('-').next().unwrap_or(name);
            let mut labels = super::workloads::statefulset_selector(world, &set.namespace, &set.name);
            labels.insert("controller.kubernetes.io/hash".into(), hash.to_string());
            Some(json!({
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {
                    "name": name,
                    "namespace": set.namespace,
                    "uid": uid("ControllerRevision", &set.namespace, name),
                    "creationTimestamp": rfc3339(created),
                    "labels": labels,
                    "ownerReferences": [controller_ref("StatefulSet", &set.name, &uid("StatefulSet", &set.namespace, &set.name))],
                },
                "revision": i + 1,
                "data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": labels}, "spec": template}}},
            }))
        })
        .collect()
}
