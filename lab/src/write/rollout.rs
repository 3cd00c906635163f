//! A Deployment's pod template changed, rolled out at once as the deployment controller would
//! finish it (StatefulSets and DaemonSets: `restart`).
//!
//! The applied template is compared with each ReplicaSet's (exactly, then by images and
//! annotations, `pod-template-hash` aside, see `template`). The current one's: nothing to roll
//! out. An older one's (`rollout undo`): that ReplicaSet becomes current again under the next
//! revision number (its old number kept in `deployment.kubernetes.io/revision-history`), as the
//! deployment controller re-labels it. Any other (`rollout restart` sets
//! `kubectl.kubernetes.io/restartedAt`): a new ReplicaSet with a new `pod-template-hash`. Then
//! every pod of the Deployment is replaced by `replicas` fresh pods of the template, the
//! Deployment's generation goes up, and the controllers' events are recorded
//! (`ScalingReplicaSet`, `SuccessfulCreate`, `SuccessfulDelete`).
//!
//! Before a Deployment's revisions are reordered or added to, each one's number and hash are
//! fixed (`freeze`), so a ReplicaSet keeps its name whatever its position.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::event;
use super::pods::{
    from_template, nth_node, remove, schedulable_nodes, template_metadata, unique_name,
};
use super::template::{annotations, images, restart_or_update, same_images, same_template};
use crate::reltime::RelTime;
use crate::render::objects::{k8s_hash, replica_sets};
use crate::render::world::{PodOwner, World};
use crate::scenario::{Change, RevisionSpec, Scenario};

/// A template change: what it was and the pods it created.
pub(super) type Rolled = Option<(Change, Vec<String>)>;

/// Fixes each revision's number and `pod-template-hash` (its position's, its pods') so that
/// reordering or adding revisions keeps every ReplicaSet's name and number.
pub(super) fn freeze(world: &mut Scenario, index: usize) {
    let hashes: Vec<String> = {
        let view = World::new(world);
        let deployment = &world.spec.deployments[index];
        (1..=deployment.revisions.len())
            .map(|position| view.template_hash(deployment, position))
            .collect()
    };
    let revisions = &mut world.spec.deployments[index].revisions;
    for (position, (revision, hash)) in revisions.iter_mut().zip(hashes).enumerate() {
        revision.hash.get_or_insert(hash);
        revision.number.get_or_insert(position + 1);
    }
}

/// Creates `count` pods of the deployment's current revision from `template` (on the
/// `preferred` nodes first); their names.
pub(super) fn create_deployment_pods(
    world: &mut Scenario,
    index: usize,
    template: &Value,
    count: usize,
    preferred: &[Option<String>],
    now: DateTime<Utc>,
) -> Result<Vec<String>, String> {
    let (name, namespace, hash) = {
        let view = World::new(world);
        let deployment = &world.spec.deployments[index];
        let hash = view.template_hash(deployment, deployment.revisions.len());
        (deployment.name.clone(), deployment.namespace.clone(), hash)
    };
    let replica_set = format!("{name}-{hash}");
    let nodes = schedulable_nodes(world, preferred);
    let (mut labels, annotations) = template_metadata(template);
    labels.insert("pod-template-hash".into(), hash);
    let spec = template.get("spec").unwrap_or(&Value::Null);
    let mut created = Vec::new();
    for i in 0..count {
        let pod_name = unique_name(world, &namespace, &replica_set, &i.to_string());
        let mut pod = from_template(spec, &pod_name, &namespace, nth_node(&nodes, i), now)?;
        pod.deployment = Some(name.clone());
        pod.labels = labels.clone();
        pod.annotations = annotations.clone();
        world.spec.pods.push(pod);
        let message = format!("Created pod: {pod_name}");
        event(
            world,
            "SuccessfulCreate",
            message,
            ("ReplicaSet", &replica_set, Some(&namespace)),
            now,
        );
        created.push(pod_name);
    }
    Ok(created)
}

/// A new `pod-template-hash` for `template`, unused by the deployment's revisions.
fn new_hash(world: &Scenario, index: usize, template: &Value) -> String {
    let deployment = &world.spec.deployments[index];
    let taken = |hash: &str| {
        deployment
            .revisions
            .iter()
            .any(|r| r.hash.as_deref() == Some(hash))
    };
    let mut hash = String::new();
    for attempt in 0..64u32 {
        hash = k8s_hash(&format!("{}/{template}/{attempt}", deployment.name), 10);
        if !taken(&hash) {
            break;
        }
    }
    hash
}

/// Which ReplicaSet an applied template is.
enum Matched {
    /// The current one's: nothing to roll out.
    Current,
    /// An older revision's (its position, from 1): a rollback.
    Older(usize),
    /// No ReplicaSet's: a new revision.
    New,
}

/// The ReplicaSet (of `sets`, oldest first) whose template `template` is: exactly, else by
/// images and annotations.
fn matched(sets: &[Value], template: &Value) -> Matched {
    let served = |position: usize| &sets[position - 1]["spec"]["template"];
    let last = sets.len();
    if last == 0 || same_template(served(last), template) {
        return Matched::Current;
    }
    let older = || (1..last).rev();
    if let Some(position) = older().find(|p| same_template(served(*p), template)) {
        return Matched::Older(position);
    }
    if same_images(served(last), template) {
        return Matched::Current;
    }
    older()
        .find(|p| same_images(served(*p), template))
        .map_or(Matched::New, Matched::Older)
}

/// A pod a rollout replaces: name, node and ReplicaSet.
struct Replaced {
    name: String,
    node: Option<String>,
    replica_set: Option<String>,
}

/// Every pod of the Deployment `namespace/name`.
fn replaced(world: &Scenario, namespace: &str, name: &str) -> Vec<Replaced> {
    let view = World::new(world);
    view.pods_of("Deployment", namespace, name)
        .into_iter()
        .map(|p| {
            let replica_set = match view.owner(p) {
                Some(PodOwner::Revision {
                    deployment,
                    revision,
                }) => Some(view.replica_set_name(deployment, revision)),
                Some(PodOwner::Controller { name, .. }) => Some(name.to_string()),
                None => None,
            };
            Replaced {
                name: p.name.clone(),
                node: p.node.clone(),
                replica_set,
            }
        })
        .collect()
}

/// Makes the template's revision current under the next number: the older revision at
/// `position` (a rollback), or a new one (a restart or another update, compared with
/// `current`, the served current template).
fn renumber(
    world: &mut Scenario,
    index: usize,
    matched: &Matched,
    template: &Value,
    current: &Value,
    change_cause: Option<String>,
    now: DateTime<Utc>,
) -> Change {
    freeze(world, index);
    let deployment = &mut world.spec.deployments[index];
    let container = deployment
        .container
        .clone()
        .unwrap_or_else(|| deployment.name.clone());
    let revisions = &mut deployment.revisions;
    let next = revisions
        .iter()
        .filter_map(|r| r.number)
        .max()
        .unwrap_or(revisions.len())
        + 1;
    if let Matched::Older(position) = *matched {
        let mut revision = revisions.remove(position - 1);
        revision.history.push(revision.number.unwrap_or(position));
        revision.number = Some(next);
        revision.template_annotations = annotations(template);
        revisions.push(revision);
        return Change::Rollback;
    }
    let previous = revisions.last().cloned();
    let images = images(template);
    let image = images
        .get(&container)
        .or_else(|| images.values().next())
        .cloned()
        .or_else(|| previous.as_ref().map(|r| r.image.clone()))
        .unwrap_or_default();
    revisions.push(RevisionSpec {
        image,
        created: RelTime::Absolute(now),
        change_cause: change_cause.or_else(|| previous.and_then(|r| r.change_cause)),
        number: Some(next),
        hash: None,
        template_annotations: annotations(template),
        history: Vec::new(),
    });
    let hash = new_hash(world, index, template);
    if let Some(revision) = world.spec.deployments[index].revisions.last_mut() {
        revision.hash = Some(hash);
    }
    restart_or_update(current, template)
}

/// The deployment controller's account of a rollout of `replicas` pods: the current set scaled
/// up (from its old count: `target`'s), every other set that had pods scaled down.
fn scaling_events(
    world: &mut Scenario,
    index: usize,
    sets: &[Value],
    target: Option<usize>,
    now: DateTime<Utc>,
) {
    let (name, namespace, replicas) = {
        let d = &world.spec.deployments[index];
        (d.name.clone(), d.namespace.clone(), d.replicas)
    };
    let from = |position: usize| sets[position - 1]["spec"]["replicas"].as_u64().unwrap_or(0);
    let set_name = |position: usize| {
        sets[position - 1]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let current = {
        let deployment = &world.spec.deployments[index];
        World::new(world).replica_set_name(deployment, deployment.revisions.len())
    };
    let up_from = target.map_or(0, from);
    let deployment_ref = ("Deployment", name.as_str(), Some(namespace.as_str()));
    event(
        world,
        "ScalingReplicaSet",
        format!("Scaled up replica set {current} to {replicas} from {up_from}"),
        deployment_ref,
        now,
    );
    for position in (1..=sets.len()).filter(|p| Some(*p) != target && from(*p) > 0) {
        let message = format!(
            "Scaled down replica set {} to 0 from {}",
            set_name(position),
            from(position)
        );
        event(world, "ScalingReplicaSet", message, deployment_ref, now);
    }
}

/// The Deployment `index`'s template set to `template` (with `change_cause` for a new
/// revision), rolled out.
pub(super) fn deployment(
    world: &mut Scenario,
    index: usize,
    template: &Value,
    change_cause: Option<String>,
    now: DateTime<Utc>,
) -> Result<Rolled, String> {
    let sets = {
        let view = World::new(world);
        replica_sets(&view, &world.spec.deployments[index])
    };
    let matched = matched(&sets, template);
    if matches!(matched, Matched::Current) {
        return Ok(None);
    }
    let deployment = &world.spec.deployments[index];
    if deployment.paused {
        return Err(format!(
            "the lab does not roll out the template of the paused deployment \"{}\": resume it first",
            deployment.name
        ));
    }
    let (name, namespace, replicas) = (
        deployment.name.clone(),
        deployment.namespace.clone(),
        deployment.replicas,
    );
    let generation = deployment
        .generation
        .unwrap_or(deployment.revisions.len() as u64);
    let old = replaced(world, &namespace, &name);
    let current = sets
        .last()
        .map_or(Value::Null, |s| s["spec"]["template"].clone());
    let change = renumber(
        world,
        index,
        &matched,
        template,
        &current,
        change_cause,
        now,
    );
    let names: Vec<String> = old.iter().map(|p| p.name.clone()).collect();
    remove(world, &namespace, &names);
    for pod in &old {
        if let Some(set) = &pod.replica_set {
            let message = format!("Deleted pod: {}", pod.name);
            let set_ref = ("ReplicaSet", set.as_str(), Some(namespace.as_str()));
            event(world, "SuccessfulDelete", message, set_ref, now);
        }
    }
    let nodes: Vec<Option<String>> = old.iter().map(|p| p.node.clone()).collect();
    let created = create_deployment_pods(world, index, template, replicas as usize, &nodes, now)?;
    let target = match matched {
        Matched::Older(position) => Some(position),
        _ => None,
    };
    scaling_events(world, index, &sets, target, now);
    let deployment = &mut world.spec.deployments[index];
    deployment.generation = Some(generation + 1);
    deployment.status = None;
    deployment.conditions.clear();
    deployment.changed = Some(RelTime::Absolute(now));
    Ok(Some((change, created)))
}
