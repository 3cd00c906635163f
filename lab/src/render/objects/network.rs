//! Services and their Endpoints. Endpoints are computed as the endpoints controller would:
//! scheduled, unfinished pods in the Service's namespace whose labels (defaults included)
//! match its selector, ready ones under `addresses`, the others under `notReadyAddresses`.
//! A Service's `endpoints` replaces that; a Service without a selector has no Endpoints.

use serde_json::{Map, Value, json};

use super::pods::{pod_active, pod_labels, pod_ready};
use super::{insert_some, k8s_hash, rfc3339, uid};
use crate::render::world::World;
use crate::scenario::{PodSpec, ServicePortSpec, ServiceSpec};

/// A stable made-up address in the default service range (10.96.0.0/12).
fn cluster_ip(service: &ServiceSpec) -> String {
    let seed = format!("{}/{}", service.namespace, service.name);
    let h = seed.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("10.96.{}.{}", (h >> 8) % 256, h % 254 + 1)
}

fn target_port(port: &ServicePortSpec) -> Value {
    port.target_port.clone().unwrap_or(json!(port.port))
}

fn metadata(service: &ServiceSpec, world: &World) -> Value {
    json!({
        "name": service.name,
        "namespace": service.namespace,
        "uid": uid("Service", &service.namespace, &service.name),
        "creationTimestamp": rfc3339(world.scenario.alert_at - chrono::Duration::days(30)),
    })
}

/// The Service object.
pub(crate) fn service_object(world: &World, service: &ServiceSpec) -> Value {
    let ip = service
        .cluster_ip
        .clone()
        .unwrap_or_else(|| cluster_ip(service));
    let ports: Vec<Value> = service
        .ports
        .iter()
        .map(|p| {
            let mut m = Map::new();
            insert_some(&mut m, "name", p.name.as_ref());
            m.insert("port".into(), json!(p.port));
            m.insert("targetPort".into(), target_port(p));
            m.insert(
                "protocol".into(),
                json!(p.protocol.as_deref().unwrap_or("TCP")),
            );
            Value::Object(m)
        })
        .collect();
    let mut spec = json!({
        "type": service.kind.as_deref().unwrap_or("ClusterIP"),
        "ports": ports,
        "clusterIP": ip,
        "clusterIPs": [ip],
        "sessionAffinity": "None",
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "internalTrafficPolicy": "Cluster",
    });
    if !service.selector.is_empty() {
        spec["selector"] = json!(service.selector);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(service, world),
        "spec": spec,
        "status": {"loadBalancer": {}},
    })
}

/// The pods a Service selects (none without a selector).
pub(crate) fn selected_pods<'a>(world: &World<'a>, service: &ServiceSpec) -> Vec<&'a PodSpec> {
    if service.selector.is_empty() {
        return Vec::new();
    }
    world
        .spec
        .pods
        .iter()
        .filter(|p| p.namespace == service.namespace)
        .filter(|p| {
            let labels = pod_labels(world, p);
            service
                .selector
                .iter()
                .all(|(k, v)| labels.get(k) == Some(v))
        })
        .collect()
}

/// The number a named target port resolves to in a pod (`ports[].containerPort`).
fn resolve_port(port: &ServicePortSpec, pods: &[&PodSpec]) -> Value {
    let target = target_port(port);
    let Some(name) = target.as_str() else {
        return target;
    };
    pods.iter()
        .flat_map(|p| &p.containers)
        .filter_map(|c| c.spec_extra.get("ports").and_then(Value::as_array))
        .flatten()
        .find(|p| p["name"] == name)
        .and_then(|p| p.get("containerPort").cloned())
        .unwrap_or(json!(port.port))
}

/// An Endpoints address: a scheduled pod's IP (only scheduled pods have one).
fn address(pod: &PodSpec, ip: &str) -> Value {
    json!({
        "ip": ip,
        "nodeName": pod.node,
        "targetRef": {
            "kind": "Pod", "name": pod.name, "namespace": pod.namespace,
            "uid": k8s_hash(&format!("pod/{}", pod.name), 16),
        },
    })
}

/// The Service's Endpoints, if it has any (a selector, or `endpoints`).
pub(crate) fn endpoints_object(world: &World, service: &ServiceSpec) -> Option<Value> {
    let pods: Vec<&PodSpec> = selected_pods(world, service)
        .into_iter()
        .filter(|p| pod_active(p))
        .collect();
    let (ready, not_ready): (Vec<Value>, Vec<Value>) = match &service.endpoints {
        Some(given) => (
            given.addresses.iter().map(|ip| json!({"ip": ip})).collect(),
            given
                .not_ready_addresses
                .iter()
                .map(|ip| json!({"ip": ip}))
                .collect(),
        ),
        None if service.selector.is_empty() => return None,
        None => {
            let mut ready = Vec::new();
            let mut not_ready = Vec::new();
            for pod in &pods {
                if let Some(ip) = world.pod_ip(pod) {
                    let entry = address(pod, ip);
                    if pod_ready(pod) {
                        ready.push(entry);
                    } else {
                        not_ready.push(entry);
                    }
                }
            }
            (ready, not_ready)
        }
    };
    let mut object = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": metadata(service, world),
    });
    object["metadata"]["uid"] = json!(uid("Endpoints", &service.namespace, &service.name));
    if !ready.is_empty() || !not_ready.is_empty() {
        let ports: Vec<Value> = service
            .ports
            .iter()
            .map(|p| {
                let mut m = Map::new();
                insert_some(&mut m, "name", p.name.as_ref());
                m.insert("port".into(), resolve_port(p, &pods));
                m.insert(
                    "protocol".into(),
                    json!(p.protocol.as_deref().unwrap_or("TCP")),
                );
                Value::Object(m)
            })
            .collect();
        let mut subset = Map::new();
        if !ready.is_empty() {
            subset.insert("addresses".into(), Value::Array(ready));
        }
        if !not_ready.is_empty() {
            subset.insert("notReadyAddresses".into(), Value::Array(not_ready));
        }
        subset.insert("ports".into(), Value::Array(ports));
        object["subsets"] = json!([subset]);
    }
    Some(object)
}
