//! core/v1 Events, with the component that would have reported each.

use serde_json::{Value, json};

use super::{api_version_of, rfc3339};
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
        _ => "deployment-controller",
    }
}

/// The `index`th event of the scenario as a core/v1 Event.
pub(crate) fn event_object(world: &World, index: usize, event: &EventSpec) -> Value {
    let at = world.time(event.at);
    let namespace = event.namespace();
    let object = &event.involved_object;
    let component = component(event);
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": format!("{}.{:016x}", object.name, 0x17f0_0000_0000_0000_u64 + index as u64),
            "namespace": namespace,
            "creationTimestamp": rfc3339(at),
            "resourceVersion": (100 + index).to_string(),
        },
        "involvedObject": {
            "apiVersion": api_version_of(&object.kind),
            "kind": object.kind,
            "name": object.name,
            "namespace": object.namespace.clone().unwrap_or_else(|| namespace.clone()),
        },
        "reason": event.reason,
        "message": event.message.trim(),
        "type": event.kind,
        "count": event.count.unwrap_or(1),
        "firstTimestamp": rfc3339(at),
        "lastTimestamp": rfc3339(at),
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": "",
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
