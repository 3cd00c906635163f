//! core/v1 Events, with the component that would have reported each. An event about a
//! cluster-scoped object (a Node) is recorded in `default` with no namespace in its
//! `involvedObject`, and a Node's carries the node's name as its uid, as the kubelet records
//! them — so `kubectl describe node`'s field selector (`involvedObject.kind=Node,
//! involvedObject.name=X,involvedObject.namespace=,involvedObject.uid=X`) finds them.

use serde_json::{Map, Value, json};

use super::{api_version_of, namespaced, object_uid, rfc3339};
use crate::render::world::World;
use crate::scenario::EventSpec;

/// Who reports events about a kind.
fn component(event: &EventSpec) -> &'static str {
    match event.involved_object.kind.as_str() {
        "Pod" if event.reason == "Scheduled" || event.reason == "FailedScheduling" => {
            "default-scheduler"
        }
        "Pod" | "Node" => "kubelet",
        "ReplicaSet" => "replicaset-controller",
        "StatefulSet" => "statefulset-controller",
        "DaemonSet" => "daemonset-controller",
        "Job" => "job-controller",
        "CronJob" => "cronjob-controller",
        "HorizontalPodAutoscaler" => "horizontal-pod-autoscaler",
        "PersistentVolumeClaim" | "PersistentVolume" => "persistentvolume-controller",
        "Service" | "Endpoints" => "endpoint-controller",
        "PodDisruptionBudget" => "controllermanager",
        "Ingress" => "nginx-ingress-controller",
        _ => "deployment-controller",
    }
}

/// The event's `involvedObject`: a namespaced object's namespace (its own, else the event's),
/// none for a cluster-scoped one whatever the scenario wrote, and the object's uid (a Node's
/// name: the kubelet's node reference uses it).
fn involved_object(event: &EventSpec, namespace: &str) -> Value {
    let object = &event.involved_object;
    let mut m = Map::new();
    m.insert("apiVersion".into(), json!(api_version_of(&object.kind)));
    m.insert("kind".into(), json!(object.kind));
    m.insert("name".into(), json!(object.name));
    let uid = if object.kind == "Node" {
        object.name.clone()
    } else if namespaced(&object.kind) {
        let own = object.namespace.clone().unwrap_or_else(|| namespace.into());
        let uid = object_uid(&object.kind, &own, &object.name);
        m.insert("namespace".into(), json!(own));
        uid
    } else {
        object_uid(&object.kind, "", &object.name)
    };
    m.insert("uid".into(), json!(uid));
    Value::Object(m)
}

/// The node a kubelet event came from: a Node's own name, or the node of the pod it is about.
fn kubelet_host(world: &World, event: &EventSpec) -> Option<String> {
    let object = &event.involved_object;
    match object.kind.as_str() {
        "Node" => Some(object.name.clone()),
        "Pod" => world
            .spec
            .pods
            .iter()
            .find(|p| p.name == object.name && p.namespace == event.namespace())
            .and_then(|p| p.node.clone()),
        _ => None,
    }
}

/// The `index`th event of the scenario as a core/v1 Event.
pub(crate) fn event_object(world: &World, index: usize, event: &EventSpec) -> Value {
    let at = world.time(event.at);
    let namespace = event.namespace();
    let object = &event.involved_object;
    let component = component(event);
    let host = (component == "kubelet")
        .then(|| kubelet_host(world, event))
        .flatten();
    let mut source = Map::new();
    source.insert("component".into(), json!(component));
    if let Some(host) = &host {
        source.insert("host".into(), json!(host));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": format!("{}.{:016x}", object.name, 0x17f0_0000_0000_0000_u64 + index as u64),
            "namespace": namespace,
            "creationTimestamp": rfc3339(at),
            "resourceVersion": (100 + index).to_string(),
        },
        "involvedObject": involved_object(event, &namespace),
        "reason": event.reason,
        "message": event.message.trim(),
        "type": event.kind,
        "count": event.count.unwrap_or(1),
        "firstTimestamp": rfc3339(at),
        "lastTimestamp": rfc3339(at),
        "source": source,
        "reportingComponent": component,
        "reportingInstance": host.unwrap_or_default(),
    })
}

/// Every event, oldest first: kubernetes-mcp-server prints events in the API's order, and
/// `events_list` (lab) prints them oldest first, so both paths read alike.
pub(crate) fn events(world: &World) -> Vec<Value> {
    let mut events: Vec<(usize, &EventSpec)> = world.spec.events.iter().enumerate().collect();
    events.sort_by_key(|(_, e)| world.time(e.at));
    events
        .into_iter()
        .map(|(i, e)| event_object(world, i, e))
        .collect()
}
