//! The Kubernetes object model: a scenario's pods and deployments as the API server would return
//! them (Pods, ReplicaSets, Deployments as JSON values), with stable made-up names, hashes and
//! uids. The MCP tools print these as YAML; the fake Kubernetes API serves them as JSON.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use crate::reltime::RelTime;
use crate::scenario::{ContainerStateSpec, DeploymentSpec, PodSpec, Scenario};

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A short, stable, Kubernetes-looking hash (pod-template-hash alphabet).
fn k8s_hash(seed: &str, len: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut out = String::new();
    for round in 0..len {
        for b in seed.bytes().chain([round as u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push(ALPHABET[(h % ALPHABET.len() as u64) as usize] as char);
    }
    out
}

fn replica_set_name(deployment: &DeploymentSpec, revision: usize) -> String {
    format!(
        "{}-{}",
        deployment.name,
        k8s_hash(&format!("{}/{}", deployment.name, revision), 10)
    )
}

fn state_value(scenario: &Scenario, state: &ContainerStateSpec) -> Value {
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
        let started = scenario.time(r.started_at.unwrap_or(RelTime::Offset(Duration::hours(-1))));
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
            m.insert("startedAt".into(), json!(rfc3339(scenario.time(at))));
        }
        if let Some(at) = t.finished_at {
            m.insert("finishedAt".into(), json!(rfc3339(scenario.time(at))));
        }
        m.insert(
            "containerID".into(),
            json!(format!("containerd://{}", k8s_hash(&format!("{m:?}"), 24))),
        );
        out.insert("terminated".into(), Value::Object(m));
    }
    Value::Object(out)
}

/// The Pod object, as Kubernetes would return it.
pub fn pod_object(scenario: &Scenario, pod: &PodSpec) -> Value {
    let created = scenario.time(pod.created.unwrap_or(RelTime::Offset(Duration::hours(-1))));
    let mut labels = pod.labels.clone();
    let mut owner = Vec::new();
    if let Some(deployment) = pod.deployment.as_ref().and_then(|name| {
        scenario
            .spec
            .deployments
            .iter()
            .find(|d| &d.name == name && d.namespace == pod.namespace)
    }) {
        let latest = deployment.revisions.len();
        let rs = replica_set_name(deployment, latest);
        labels
            .entry("app".into())
            .or_insert_with(|| deployment.name.clone());
        labels.insert(
            "pod-template-hash".into(),
            rs.rsplit('-').next().unwrap_or_default().to_string(),
        );
        owner.push(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
            "controller": true, "blockOwnerDeletion": true,
            "uid": k8s_hash(&format!("uid/{}", rs), 16),
        }));
    }
    let containers: Vec<Value> = pod
        .containers
        .iter()
        .map(|c| {
            let mut spec = Map::new();
            spec.insert("name".into(), json!(c.name));
            spec.insert("image".into(), json!(c.image));
            spec.insert("imagePullPolicy".into(), json!("IfNotPresent"));
            spec.insert("resources".into(), json!(c.resources));
            for (k, v) in &c.spec_extra {
                spec.insert(k.clone(), v.clone());
            }
            Value::Object(spec)
        })
        .collect();
    let statuses: Vec<Value> = pod
        .containers
        .iter()
        .map(|c| {
            let running = ContainerStateSpec {
                waiting: None,
                running: Some(crate::scenario::RunningSpec { started_at: None }),
                terminated: None,
            };
            let state = c.state.as_ref().unwrap_or(&running);
            json!({
                "name": c.name,
                "image": c.image,
                "imageID": format!("{}@sha256:{}", c.image.split(':').next().unwrap_or_default(), k8s_hash(&c.image, 32)),
                "ready": c.ready,
                "started": state.running.is_some(),
                "restartCount": c.restart_count,
                "state": state_value(scenario, state),
                "lastState": c.last_state.as_ref().map_or(json!({}), |s| state_value(scenario, s)),
            })
        })
        .collect();
    let all_ready = pod.containers.iter().all(|c| c.ready);
    let conditions: Vec<Value> = if pod.conditions.is_empty() {
        let ready = if all_ready { "True" } else { "False" };
        let mut list = vec![
            json!({"type": "PodScheduled", "status": if pod.node.is_some() { "True" } else { "False" }, "lastTransitionTime": rfc3339(created)}),
        ];
        if pod.node.is_some() {
            list.push(json!({"type": "Initialized", "status": "True", "lastTransitionTime": rfc3339(created)}));
            let mut c = json!({"type": "ContainersReady", "status": ready, "lastTransitionTime": rfc3339(created)});
            let mut r =
                json!({"type": "Ready", "status": ready, "lastTransitionTime": rfc3339(created)});
            if !all_ready {
                let names: Vec<&str> = pod
                    .containers
                    .iter()
                    .filter(|c| !c.ready)
                    .map(|c| c.name.as_str())
                    .collect();
                let message = format!("containers with unready status: [{}]", names.join(" "));
                for v in [&mut c, &mut r] {
                    v["reason"] = json!("ContainersNotReady");
                    v["message"] = json!(message);
                }
            }
            list.push(c);
            list.push(r);
        }
        list
    } else {
        pod.conditions
            .iter()
            .map(|c| {
                let mut m = Map::new();
                m.insert("type".into(), json!(c.kind));
                m.insert("status".into(), json!(c.status));
                if let Some(r) = &c.reason {
                    m.insert("reason".into(), json!(r));
                }
                if let Some(msg) = &c.message {
                    m.insert("message".into(), json!(msg));
                }
                m.insert(
                    "lastTransitionTime".into(),
                    json!(rfc3339(
                        scenario.time(c.at.unwrap_or(RelTime::Offset(Duration::zero())))
                    )),
                );
                Value::Object(m)
            })
            .collect()
    };
    let phase = pod.phase.clone().unwrap_or_else(|| {
        if pod.node.is_some() {
            "Running"
        } else {
            "Pending"
        }
        .to_string()
    });
    let mut spec = Map::new();
    spec.insert("containers".into(), Value::Array(containers));
    spec.insert("restartPolicy".into(), json!("Always"));
    if let Some(node) = &pod.node {
        spec.insert("nodeName".into(), json!(node));
    }
    for (k, v) in &pod.spec_extra {
        spec.insert(k.clone(), v.clone());
    }
    let mut status = Map::new();
    status.insert("phase".into(), json!(phase));
    status.insert("conditions".into(), Value::Array(conditions));
    status.insert("qosClass".into(), json!("Burstable"));
    if pod.node.is_some() {
        status.insert("containerStatuses".into(), Value::Array(statuses));
        status.insert("startTime".into(), json!(rfc3339(created)));
        status.insert(
            "podIP".into(),
            json!(format!(
                "10.244.{}.{}",
                created.timestamp() % 200,
                pod.name.len() + 10
            )),
        );
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
    if !owner.is_empty() {
        metadata.insert("ownerReferences".into(), Value::Array(owner));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// The ReplicaSets of a deployment, oldest revision first.
pub fn replica_sets(scenario: &Scenario, deployment: &DeploymentSpec) -> Vec<Value> {
    let latest = deployment.revisions.len();
    let container = deployment
        .container
        .clone()
        .unwrap_or_else(|| deployment.name.clone());
    deployment
        .revisions
        .iter()
        .enumerate()
        .map(|(i, revision)| {
            let number = i + 1;
            let name = replica_set_name(deployment, number);
            let hash = name.rsplit('-').next().unwrap_or_default().to_string();
            let replicas = if number == latest { deployment.replicas } else { 0 };
            let mut annotations = Map::new();
            annotations.insert("deployment.kubernetes.io/revision".into(), json!(number.to_string()));
            annotations.insert("deployment.kubernetes.io/desired-replicas".into(), json!(deployment.replicas.to_string()));
            if let Some(cause) = &revision.change_cause {
                annotations.insert("kubernetes.io/change-cause".into(), json!(cause));
            }
            json!({
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": name,
                    "namespace": deployment.namespace,
                    "creationTimestamp": rfc3339(scenario.time(revision.created)),
                    "labels": {"app": deployment.name, "pod-template-hash": hash},
                    "annotations": annotations,
                    "ownerReferences": [{
                        "apiVersion": "apps/v1", "kind": "Deployment", "name": deployment.name,
                        "controller": true, "blockOwnerDeletion": true,
                        "uid": k8s_hash(&format!("uid/{}", deployment.name), 16),
                    }],
                },
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": deployment.name, "pod-template-hash": hash}},
                    "template": {
                        "metadata": {"labels": {"app": deployment.name, "pod-template-hash": hash}},
                        "spec": {"containers": [{"name": container, "image": revision.image}]},
                    },
                },
                "status": {"replicas": replicas, "observedGeneration": number},
            })
        })
        .collect()
}

/// The Deployment object.
pub fn deployment_object(scenario: &Scenario, deployment: &DeploymentSpec) -> Value {
    let container = deployment
        .container
        .clone()
        .unwrap_or_else(|| deployment.name.clone());
    let first = deployment
        .revisions
        .first()
        .map(|r| scenario.time(r.created));
    let latest = deployment.revisions.last();
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": deployment.name,
            "namespace": deployment.namespace,
            "creationTimestamp": first.map(rfc3339),
            "annotations": {"deployment.kubernetes.io/revision": deployment.revisions.len().to_string()},
            "labels": {"app": deployment.name},
        },
        "spec": {
            "replicas": deployment.replicas,
            "selector": {"matchLabels": {"app": deployment.name}},
            "template": {
                "metadata": {"labels": {"app": deployment.name}},
                "spec": {"containers": [{"name": container, "image": latest.map(|r| r.image.clone())}]},
            },
        },
    })
}
