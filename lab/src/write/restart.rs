//! A StatefulSet's or DaemonSet's pod template changed (a `rollout restart`, a new image), rolled
//! out at once: a StatefulSet's pods are recreated under the same names (highest ordinal
//! first), fresh, with the template's images and a new `controller-revision-hash`; each of a
//! DaemonSet's pods is replaced by a new one on the same node. The controllers' events are
//! recorded.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::event;
use super::pods::{fresh, nth_node, remove, schedulable_nodes, unique_name};
use super::rollout::Rolled;
use super::template::{
    annotations, images, restart_or_update, same_images, same_template, set_images,
};
use crate::render::objects::{daemonset_object, k8s_hash, statefulset_object};
use crate::render::world::World;
use crate::scenario::{PodSpec, Scenario, StatefulSetStatusSpec};

/// The StatefulSet `index`'s template set to `template`: its pods recreated under their names.
pub(super) fn statefulset(
    world: &mut Scenario,
    index: usize,
    template: &Value,
    now: DateTime<Utc>,
) -> Result<Rolled, String> {
    let (served, pods) = {
        let view = World::new(world);
        let set = &world.spec.statefulsets[index];
        let served = statefulset_object(&view, set)["spec"]["template"].clone();
        let pods: Vec<String> = view
            .pods_of("StatefulSet", &set.namespace, &set.name)
            .iter()
            .map(|p| p.name.clone())
            .collect();
        (served, pods)
    };
    if same_template(&served, template) || same_images(&served, template) {
        return Ok(None);
    }
    let change = restart_or_update(&served, template);
    let images = images(template);
    let new_annotations = annotations(template);
    let set = &mut world.spec.statefulsets[index];
    let generation = set.generation.unwrap_or(1) + 1;
    set.generation = Some(generation);
    set.template_annotations = new_annotations.clone();
    if set.image.is_some() {
        set.image = template
            .pointer("/spec/containers/0/image")
            .and_then(Value::as_str)
            .map(String::from)
            .or(set.image.take());
    }
    let revision = format!(
        "{}-{}",
        set.name,
        k8s_hash(&format!("{}/{generation}", set.name), 10)
    );
    set.status = Some(StatefulSetStatusSpec {
        current_revision: Some(revision.clone()),
        update_revision: Some(revision.clone()),
        ..Default::default()
    });
    set.conditions.clear();
    let (set_name, namespace) = (set.name.clone(), set.namespace.clone());
    // The controller replaces the highest ordinal first.
    let mut order = pods;
    order.sort_by_key(|name| std::cmp::Reverse(ordinal(name)));
    for name in &order {
        let Some(position) = world
            .spec
            .pods
            .iter()
            .position(|p| &p.name == name && p.namespace == namespace)
        else {
            continue;
        };
        let old = world.spec.pods[position].clone();
        let node = nth_node(
            &schedulable_nodes(world, std::slice::from_ref(&old.node)),
            0,
        );
        let mut pod = fresh(&old, name, node, now);
        set_images(&mut pod, &images);
        pod.annotations = new_annotations.clone();
        pod.labels
            .insert("controller-revision-hash".into(), revision.clone());
        remove(world, &namespace, std::slice::from_ref(name));
        world.spec.pods.insert(position, pod);
        let set_ref = ("StatefulSet", set_name.as_str(), Some(namespace.as_str()));
        let deleted = format!("delete Pod {name} in StatefulSet {set_name} successful");
        event(world, "SuccessfulDelete", deleted, set_ref, now);
        let created = format!("create Pod {name} in StatefulSet {set_name} successful");
        event(world, "SuccessfulCreate", created, set_ref, now);
    }
    Ok(Some((change, order)))
}

/// A pod name's ordinal (`web-2` → 2), for ordering.
pub(super) fn ordinal(name: &str) -> Option<u32> {
    name.rsplit('-').next()?.parse().ok()
}

/// The DaemonSet `index`'s template set to `template`: each node's pod replaced.
pub(super) fn daemonset(
    world: &mut Scenario,
    index: usize,
    template: &Value,
    now: DateTime<Utc>,
) -> Result<Rolled, String> {
    let (served, pods) = {
        let view = World::new(world);
        let set = &world.spec.daemonsets[index];
        let served = daemonset_object(&view, set)["spec"]["template"].clone();
        let pods: Vec<PodSpec> = view
            .pods_of("DaemonSet", &set.namespace, &set.name)
            .into_iter()
            .cloned()
            .collect();
        (served, pods)
    };
    if same_template(&served, template) || same_images(&served, template) {
        return Ok(None);
    }
    let change = restart_or_update(&served, template);
    let images = images(template);
    let new_annotations = annotations(template);
    let set = &mut world.spec.daemonsets[index];
    set.generation = Some(set.generation.unwrap_or(1) + 1);
    set.template_annotations = new_annotations.clone();
    if set.image.is_some() {
        set.image = template
            .pointer("/spec/containers/0/image")
            .and_then(Value::as_str)
            .map(String::from)
            .or(set.image.take());
    }
    set.status = None;
    set.conditions.clear();
    let (set_name, namespace) = (set.name.clone(), set.namespace.clone());
    let set_ref = ("DaemonSet", set_name.as_str(), Some(namespace.as_str()));
    let mut created = Vec::new();
    for old in &pods {
        let name = unique_name(world, &namespace, &set_name, &old.name);
        let mut pod = fresh(old, &name, old.node.clone(), now);
        set_images(&mut pod, &images);
        pod.annotations = new_annotations.clone();
        remove(world, &namespace, std::slice::from_ref(&old.name));
        world.spec.pods.push(pod);
        event(
            world,
            "SuccessfulDelete",
            format!("Deleted pod: {}", old.name),
            set_ref,
            now,
        );
        event(
            world,
            "SuccessfulCreate",
            format!("Created pod: {name}"),
            set_ref,
            now,
        );
        created.push(name);
    }
    Ok(Some((change, created)))
}
