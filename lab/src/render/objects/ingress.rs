//! networking.k8s.io/v1 Ingresses as written: each path's backend is a Service port by number
//! or name, `pathType` defaults to `Prefix` and `path` to `/`. The lab runs no ingress
//! controller, so the load balancer status is empty.

use chrono::Duration;
use serde_json::{Map, Value, json};

use super::{insert_some, rfc3339, uid};
use crate::render::world::World;
use crate::scenario::{IngressPathSpec, IngressRuleSpec, IngressSpec, PortRef};

fn path_object(path: &IngressPathSpec) -> Value {
    let port = match &path.port {
        PortRef::Number(number) => json!({"number": number}),
        PortRef::Name(name) => json!({"name": name}),
    };
    json!({
        "path": path.path.as_deref().unwrap_or("/"),
        "pathType": path.path_type.as_deref().unwrap_or("Prefix"),
        "backend": {"service": {"name": path.service, "port": port}},
    })
}

fn rule_object(rule: &IngressRuleSpec) -> Value {
    let mut m = Map::new();
    insert_some(&mut m, "host", rule.host.as_ref());
    // A rule without paths has no `http` (it routes nothing), as the API server keeps it.
    if !rule.paths.is_empty() {
        let paths: Vec<Value> = rule.paths.iter().map(path_object).collect();
        m.insert("http".into(), json!({"paths": paths}));
    }
    Value::Object(m)
}

/// The Ingress object.
pub(crate) fn ingress_object(world: &World, ingress: &IngressSpec) -> Value {
    let mut spec = Map::new();
    insert_some(
        &mut spec,
        "ingressClassName",
        ingress.ingress_class_name.as_ref(),
    );
    spec.insert(
        "rules".into(),
        Value::Array(ingress.rules.iter().map(rule_object).collect()),
    );
    if !ingress.tls.is_empty() {
        let tls: Vec<Value> = ingress
            .tls
            .iter()
            .map(|t| {
                let mut m = Map::new();
                if !t.hosts.is_empty() {
                    m.insert("hosts".into(), json!(t.hosts));
                }
                insert_some(&mut m, "secretName", t.secret_name.as_ref());
                Value::Object(m)
            })
            .collect();
        spec.insert("tls".into(), Value::Array(tls));
    }
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": ingress.name,
            "namespace": ingress.namespace,
            "uid": uid("Ingress", &ingress.namespace, &ingress.name),
            "generation": 1,
            "creationTimestamp": rfc3339(world.scenario.alert_at - Duration::days(30)),
        },
        "spec": spec,
        "status": {"loadBalancer": {}},
    })
}
