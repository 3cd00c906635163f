//! Pods: containers and init containers with their statuses, default conditions, phase, the
//! labels and `ownerReferences` their controller gives them, and whether a pod is ready (what
//! workload statuses and Endpoints count).

use std::collections::BTreeMap;

use chrono::Duration;
use serde_json::{Map, Value, json};

use super::nodes::internal_ip;
use super::{conditions, controller_ref, insert_some, k8s_hash, rfc3339, uid};
use crate::reltime::RelTime;
use crate::render::world::{PodOwner, World};
use crate::scenario::{ContainerSpec, ContainerStateSpec, PodSpec, RunningSpec, TerminatedSpec};

fn state_value(world: &World, state: &ContainerStateSpec) -> Value {
    let mut out = Map::new();
    if let Some(w) = &state.waiting {
        let mut m = Map::new();
        m.insert("reason".into(), json!(w.reason));
        if let Some(msg) = &w.message {
            m.insert("message".into(), json!(msg));
        }
        out.insert("waiting".into(), Value::Object(m));
    }
    if let Some(r) = &state.running {
        let started = world.time_or(r.started_at, Duration::hours(-1));
        out.insert("running".into(), json!({"startedAt": rfc3339(started)}));
    }
    if let Some(t) = &state.terminated {
        let mut m = Map::new();
        m.insert("exitCode".into(), json!(t.exit_code));
        m.insert(
            "reason".into(),
            json!(t.reason.clone().unwrap_or_else(|| if t.exit_code == 0 {
                "Completed".into()
            } else {
                "Error".into()
            })),
        );
        if let Some(msg) = &t.message {
            m.insert("message".into(), json!(msg));
        }
        if let Some(signal) = t.signal {
            m.insert("signal".into(), json!(signal));
        }
        if let Some(at) = t.started_at {
            m.insert("startedAt".into(), json!(rfc3339(world.time(at))));
        }
        if let Some(at) = t.finished_at {
            m.insert("finishedAt".into(), json!(rfc3339(world.time(at))));
        }
        m.insert(
            "containerID".into(),
            json!(format!("containerd://{}", k8s_hash(&format!("{m:?}"), 24))),
        );
        out.insert("terminated".into(), Value::Object(m));
    }
    Value::Object(out)
}

/// An init container that states nothing ran to completion when the pod started.
fn init_state(pod: &PodSpec, container: &ContainerSpec) -> ContainerStateSpec {
    container.state.clone().unwrap_or_else(|| {
        let created = pod.created.unwrap_or(RelTime::Offset(Duration::hours(-1)));
        ContainerStateSpec {
            waiting: None,
            running: None,
            terminated: Some(TerminatedSpec {
                exit_code: 0,
                reason: None,
                message: None,
                signal: None,
                started_at: Some(created),
                finished_at: Some(created),
            }),
        }
    })
}

/// Every init container exited 0.
pub(crate) fn init_finished(pod: &PodSpec) -> bool {
    pod.init_containers.iter().all(|c| {
        init_state(pod, c)
            .terminated
            .is_some_and(|t| t.exit_code == 0)
    })
}

/// The Ready condition: as stated, else scheduled with every init container done and every
/// container ready.
pub(crate) fn pod_ready(pod: &PodSpec) -> bool {
    match pod.conditions.iter().find(|c| c.kind == "Ready") {
        Some(ready) => ready.status == "True",
        None => pod.node.is_some() && init_finished(pod) && pod.containers.iter().all(|c| c.ready),
    }
}

/// The phase: as stated, else Pending until scheduled and initialised, then Running.
pub(crate) fn pod_phase(pod: &PodSpec) -> String {
    pod.phase.clone().unwrap_or_else(|| {
        if pod.node.is_some() && init_finished(pod) {
            "Running"
        } else {
            "Pending"
        }
        .to_string()
    })
}

/// Not finished (Succeeded or Failed pods no longer count as replicas).
pub(crate) fn pod_active(pod: &PodSpec) -> bool {
    !matches!(pod_phase(pod).as_str(), "Succeeded" | "Failed")
}

fn container_spec(c: &ContainerSpec) -> Value {
    let mut spec = Map::new();
    spec.insert("name".into(), json!(c.name));
    spec.insert("image".into(), json!(c.image));
    spec.insert("imagePullPolicy".into(), json!("IfNotPresent"));
    spec.insert("resources".into(), json!(c.resources));
    for (k, v) in &c.spec_extra {
        spec.insert(k.clone(), v.clone());
    }
    Value::Object(spec)
}

/// The pod template a controller made `pod` from: its containers (the one named `container`
/// running `image`, the revision's), init containers and pod-level fields, without what the
/// scheduler and kubelet add (node, status).
pub(crate) fn pod_template(pod: &PodSpec, container: &str, image: &str) -> Value {
    let mut spec = Map::new();
    let containers = pod.containers.iter().map(|c| {
        let mut spec = container_spec(c);
        if c.name == container {
            spec["image"] = json!(image);
        }
        spec
    });
    spec.insert("containers".into(), Value::Array(containers.collect()));
    if !pod.init_containers.is_empty() {
        spec.insert(
            "initContainers".into(),
            Value::Array(pod.init_containers.iter().map(container_spec).collect()),
        );
    }
    for (k, v) in &pod.spec_extra {
        spec.insert(k.clone(), v.clone());
    }
    Value::Object(spec)
}

/// Revision `i`'s template from `templates` (one per revision in order, `None` where the
/// scenario lists no pod of it): the nearest revision's that has one, what it leaves unset
/// filled from the next nearest, and so on; a later revision first among equally near ones.
pub(crate) fn nearest_template(templates: &[Option<Value>], i: usize) -> Option<Value> {
    let mut order: Vec<usize> = (0..templates.len()).collect();
    order.sort_by_key(|j| (j.abs_diff(i), std::cmp::Reverse(*j)));
    let mut found = order.into_iter().filter_map(|j| templates[j].as_ref());
    let mut template = found.next()?.clone();
    for other in found {
        inherit(&mut template, other);
    }
    Some(template)
}

/// Fills the fields `template` leaves unset (absent, or empty resources) from `other`: pod-level
/// fields, and each container's by its name.
fn inherit(template: &mut Value, other: &Value) {
    let unset = |v: Option<&Value>| v.is_none_or(|v| v.as_object().is_some_and(Map::is_empty));
    let (Some(own), Some(theirs)) = (template.as_object_mut(), other.as_object()) else {
        return;
    };
    for (key, value) in theirs {
        if key != "containers" && key != "initContainers" && unset(own.get(key)) {
            own.insert(key.clone(), value.clone());
        }
    }
    for list in ["containers", "initContainers"] {
        let Some(Value::Array(containers)) = own.get_mut(list) else {
            continue;
        };
        for container in containers.iter_mut() {
            let name = container.get("name").cloned();
            let Some(source) = theirs
                .get(list)
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|c| c.get("name") == name.as_ref()))
                .and_then(Value::as_object)
            else {
                continue;
            };
            let Some(fields) = container.as_object_mut() else {
                continue;
            };
            for (key, value) in source {
                if unset(fields.get(key)) {
                    fields.insert(key.clone(), value.clone());
                }
            }
        }
    }
}

fn container_status(
    world: &World,
    c: &ContainerSpec,
    state: &ContainerStateSpec,
    ready: bool,
) -> Value {
    json!({
        "name": c.name,
        "image": c.image,
        "imageID": format!("{}@sha256:{}", c.image.split(':').next().unwrap_or_default(), k8s_hash(&c.image, 32)),
        "ready": ready,
        "started": state.running.is_some(),
        "restartCount": c.restart_count,
        "state": state_value(world, state),
        "lastState": c.last_state.as_ref().map_or(json!({}), |s| state_value(world, s)),
    })
}

fn default_conditions(world: &World, pod: &PodSpec) -> Vec<Value> {
    let created = rfc3339(world.pod_created(pod));
    let condition = |kind: &str, ok: bool| json!({"type": kind, "status": if ok { "True" } else { "False" }, "lastTransitionTime": created});
    let mut list = vec![condition("PodScheduled", pod.node.is_some())];
    if pod.node.is_none() {
        return list;
    }
    let initialised = init_finished(pod);
    let mut initialized = condition("Initialized", initialised);
    if !initialised {
        let names: Vec<&str> = pod
            .init_containers
            .iter()
            .filter(|c| {
                init_state(pod, c)
                    .terminated
                    .is_none_or(|t| t.exit_code != 0)
            })
            .map(|c| c.name.as_str())
            .collect();
        initialized["reason"] = json!("ContainersNotInitialized");
        initialized["message"] = json!(format!(
            "containers with incomplete status: [{}]",
            names.join(" ")
        ));
    }
    list.push(initialized);
    let all_ready = initialised && pod.containers.iter().all(|c| c.ready);
    let mut containers_ready = condition("ContainersReady", all_ready);
    let mut ready = condition("Ready", all_ready);
    if all_ready {
        // Ready since its last container started, when that was after the pod was created.
        let since = pod
            .containers
            .iter()
            .filter_map(|c| c.state.as_ref()?.running.as_ref())
            .map(|r| world.time_or(r.started_at, Duration::hours(-1)))
            .chain(std::iter::once(world.pod_created(pod)))
            .max();
        if let Some(since) = since {
            for v in [&mut containers_ready, &mut ready] {
                v["lastTransitionTime"] = json!(rfc3339(since));
            }
        }
    }
    if !all_ready {
        let names: Vec<&str> = pod
            .containers
            .iter()
            .filter(|c| !c.ready || !initialised)
            .map(|c| c.name.as_str())
            .collect();
        let message = format!("containers with unready status: [{}]", names.join(" "));
        for v in [&mut containers_ready, &mut ready] {
            v["reason"] = json!("ContainersNotReady");
            v["message"] = json!(message);
        }
    }
    list.push(containers_ready);
    list.push(ready);
    list
}

/// The labels and `ownerReferences` the pod's controller gives it (the pod's own labels win).
fn ownership(world: &World, pod: &PodSpec) -> (BTreeMap<String, String>, Vec<Value>) {
    let mut labels = pod.labels.clone();
    let mut add = |key: &str, value: &str| {
        labels
            .entry(key.to_string())
            .or_insert_with(|| value.to_string());
    };
    let owner = match world.owner(pod) {
        None => return (labels, Vec::new()),
        Some(PodOwner::Revision {
            deployment,
            revision,
        }) => {
            for (k, v) in super::deployments::selector(deployment) {
                add(&k, &v);
            }
            add(
                "pod-template-hash",
                &world.template_hash(deployment, revision),
            );
            let rs = world.replica_set_name(deployment, revision);
            let uid = k8s_hash(&format!("uid/{rs}"), 16);
            controller_ref("ReplicaSet", &rs, &uid)
        }
        Some(PodOwner::Controller { kind, name }) => {
            let uid = if kind == "ReplicaSet" {
                k8s_hash(&format!("uid/{name}"), 16)
            } else {
                uid(kind, &pod.namespace, name)
            };
            match kind {
                "StatefulSet" => {
                    for (k, v) in
                        super::workloads::statefulset_selector(world, &pod.namespace, name)
                    {
                        add(&k, &v);
                    }
                    add("statefulset.kubernetes.io/pod-name", &pod.name);
                }
                "DaemonSet" => {
                    for (k, v) in super::workloads::daemonset_selector(world, &pod.namespace, name)
                    {
                        add(&k, &v);
                    }
                }
                "Job" => {
                    for key in ["job-name", "batch.kubernetes.io/job-name"] {
                        add(key, name);
                    }
                    for key in ["controller-uid", "batch.kubernetes.io/controller-uid"] {
                        add(key, &uid);
                    }
                }
                _ => {}
            }
            controller_ref(kind, name, &uid)
        }
    };
    (labels, vec![owner])
}

/// The pod's labels, its controller's defaults included (what selectors see).
pub(crate) fn pod_labels(world: &World, pod: &PodSpec) -> BTreeMap<String, String> {
    ownership(world, pod).0
}

/// The Pod object, as Kubernetes would return it.
pub(crate) fn pod_object(world: &World, pod: &PodSpec) -> Value {
    let created = world.pod_created(pod);
    let (labels, owners) = ownership(world, pod);
    let initialised = init_finished(pod);
    let mut spec = Map::new();
    spec.insert(
        "containers".into(),
        Value::Array(pod.containers.iter().map(container_spec).collect()),
    );
    if !pod.init_containers.is_empty() {
        spec.insert(
            "initContainers".into(),
            Value::Array(pod.init_containers.iter().map(container_spec).collect()),
        );
    }
    let job_pod = pod.owner.as_ref().is_some_and(|o| o.kind == "Job");
    spec.insert(
        "restartPolicy".into(),
        json!(if job_pod { "Never" } else { "Always" }),
    );
    if let Some(node) = &pod.node {
        spec.insert("nodeName".into(), json!(node));
    }
    for (k, v) in &pod.spec_extra {
        spec.insert(k.clone(), v.clone());
    }
    let conditions = if pod.conditions.is_empty() {
        default_conditions(world, pod)
    } else {
        conditions(world, &pod.conditions, &[])
    };
    let mut status = Map::new();
    status.insert("phase".into(), json!(pod_phase(pod)));
    status.insert("conditions".into(), Value::Array(conditions));
    status.insert(
        "qosClass".into(),
        json!(pod.qos_class.as_deref().unwrap_or("Burstable")),
    );
    insert_some(&mut status, "reason", pod.reason.as_ref());
    insert_some(&mut status, "message", pod.message.as_ref());
    if pod.node.is_some() {
        // Before its init containers finish, a container has not been created yet.
        let initializing = ContainerStateSpec {
            waiting: Some(crate::scenario::WaitingSpec {
                reason: "PodInitializing".into(),
                message: None,
            }),
            running: None,
            terminated: None,
        };
        let running = ContainerStateSpec {
            waiting: None,
            running: Some(RunningSpec { started_at: None }),
            terminated: None,
        };
        let fallback = if initialised { &running } else { &initializing };
        let statuses: Vec<Value> = pod
            .containers
            .iter()
            .map(|c| {
                let state = c.state.as_ref().unwrap_or(fallback);
                container_status(world, c, state, c.ready && initialised)
            })
            .collect();
        status.insert("containerStatuses".into(), Value::Array(statuses));
        if !pod.init_containers.is_empty() {
            let statuses: Vec<Value> = pod
                .init_containers
                .iter()
                .map(|c| {
                    let state = init_state(pod, c);
                    let done = state.terminated.as_ref().is_some_and(|t| t.exit_code == 0);
                    container_status(world, c, &state, c.ready && done)
                })
                .collect();
            status.insert("initContainerStatuses".into(), Value::Array(statuses));
        }
        status.insert("startTime".into(), json!(rfc3339(created)));
        if let Some(ip) = world.pod_ip(pod) {
            status.insert("podIP".into(), json!(ip));
            status.insert("podIPs".into(), json!([{"ip": ip}]));
        }
        if let Some(node) = &pod.node {
            let host = internal_ip(node);
            status.insert("hostIP".into(), json!(host));
            status.insert("hostIPs".into(), json!([{"ip": host}]));
        }
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(pod.name));
    metadata.insert("namespace".into(), json!(pod.namespace));
    metadata.insert("creationTimestamp".into(), json!(rfc3339(created)));
    metadata.insert(
        "uid".into(),
        json!(k8s_hash(&format!("pod/{}", pod.name), 16)),
    );
    if !labels.is_empty() {
        metadata.insert("labels".into(), json!(labels));
    }
    if !owners.is_empty() {
        metadata.insert("ownerReferences".into(), Value::Array(owners));
    }
    if !pod.annotations.is_empty() {
        metadata.insert("annotations".into(), json!(pod.annotations));
    }
    let mut object = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    });
    super::stamp(world, "Pod", &mut object);
    object
}
