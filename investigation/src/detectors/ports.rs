//! A Service that sends traffic to a port its pods do not listen on: its `targetPort` (a
//! number, or a name) matches no port any of its pods' containers declares, while they declare
//! others — so its Endpoints look ready and every connection through it is refused.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`PortMismatch`] | cause | the Service's spec and its pods' specs, both read this round |
//!
//! Only pods whose every container declares its ports are compared: containers need not
//! declare the ports they listen on, and a picture with a silent container proves nothing.
//! What explains what: the mismatch explains the refused connections of the Service's clients.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lead::names_service;
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite,
};
use crate::kube;

/// A Service targeting a port its pods do not declare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortMismatch {
    pub service: String,
    /// Its cluster IP, so a client's `dial tcp <ip>:<port>` is recognised as it.
    pub cluster_ip: Option<String>,
    /// The port clients call.
    pub port: u16,
    /// What it forwards to (`8080`, `http`).
    pub target_port: String,
    /// The ports its pods' containers declare instead.
    pub declared: Vec<String>,
    /// The pods compared.
    pub pods: Vec<String>,
}

impl Payload for PortMismatch {
    const SPEC: KindSpec = KindSpec {
        name: "service-port-mismatch",
        role: Role::Cause,
        verified_when: "the Service's targetPort and its pods' declared container ports, all \
                        read this round",
        accounts_for: &[Symptom::Errors, Symptom::Unavailable, Symptom::Latency],
    };

    fn example() -> Self {
        Self {
            service: "rates-engine".into(),
            cluster_ip: Some("10.96.112.40".into()),
            port: 8080,
            target_port: "8080".into(),
            declared: vec!["9090".into()],
            pods: vec!["rates-engine-6d8f7b9c54-qz2lm".into()],
        }
    }

    fn title(&self) -> String {
        format!(
            "Service `{}` forwards port {} to targetPort {}, but its pods listen on {}",
            self.service,
            self.port,
            self.target_port,
            self.declared.join(", ")
        )
    }

    fn detail(&self) -> String {
        format!(
            "Service `{}` sends traffic to port {} of its pods ({}), whose containers declare \
             only {}: its Endpoints look ready, and connections through it are refused.",
            self.service,
            self.target_port,
            self.pods.join(", "),
            self.declared.join(", ")
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Service, self.service.clone()))
    }

    fn step(&self, scene: &Scene) -> String {
        format!(
            "Point Service `{}`'s targetPort at the port the container listens on ({}), or put \
             the container back on {} — whichever changed (`kubectl -n {} get svc {} -o yaml`).",
            self.service,
            self.declared.join(" or "),
            self.target_port,
            scene.namespace,
            self.service
        )
    }

    /// The refused connections of the Service's clients.
    fn explains(&self, effect: &Finding) -> bool {
        let Fact::Dependency(d) = &effect.fact else {
            return false;
        };
        d.endpoint
            .as_deref()
            .is_some_and(|e| names_service(e, &self.service, self.cluster_ip.as_deref()))
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let pods: Vec<&Value> = round
        .parsed_objects()
        .iter()
        .filter(|(_, o)| kube::str_at(o, "/kind") == Some("Pod"))
        .map(|(_, o)| o)
        .collect();
    round
        .objects("Service")
        .into_iter()
        .flat_map(|(evidence, service)| mismatches(evidence, service, &pods))
        .collect()
}

/// Each port of `service` whose target no selected pod declares.
fn mismatches(
    evidence: &crate::evidence::Evidence,
    service: &Value,
    pods: &[&Value],
) -> Vec<Finding> {
    let Some(name) = kube::str_at(service, "/metadata/name") else {
        return Vec::new();
    };
    let Some(selector) = service.pointer("/spec/selector").and_then(Value::as_object) else {
        return Vec::new();
    };
    // A headless Service forwards nothing: its DNS name resolves to the pods themselves, and
    // its ports only name what peers may reach (a cluster's gossip port no container declares).
    if kube::str_at(service, "/spec/clusterIP") == Some("None") {
        return Vec::new();
    }
    let namespace = kube::str_at(service, "/metadata/namespace");
    let selected: Vec<&Value> = pods
        .iter()
        .copied()
        .filter(|pod| {
            namespace.is_none_or(|ns| kube::str_at(pod, "/metadata/namespace") == Some(ns))
                && kube::selects(selector, &kube::labels_of(pod))
        })
        .collect();
    // Every container of every compared pod declares its ports.
    let declared: Option<Vec<(Vec<u64>, Vec<String>)>> =
        selected.iter().map(|pod| declared_ports(pod)).collect();
    let Some(declared) = declared.filter(|d| !d.is_empty()) else {
        return Vec::new();
    };
    let ports = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for port in &ports {
        let Some(number) = port.get("port").and_then(Value::as_u64) else {
            continue;
        };
        let target = port
            .get("targetPort")
            .cloned()
            .unwrap_or(Value::from(number));
        let served = declared.iter().any(|(numbers, names)| match &target {
            Value::Number(n) => n.as_u64().is_some_and(|t| numbers.contains(&t)),
            Value::String(s) => {
                names.contains(s) || s.parse::<u64>().is_ok_and(|t| numbers.contains(&t))
            }
            _ => true,
        });
        if served {
            continue;
        }
        let target_port = match &target {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut listening: Vec<String> = declared
            .iter()
            .flat_map(|(numbers, _)| numbers.iter().map(u64::to_string))
            .collect();
        listening.sort();
        listening.dedup();
        let quote = format!("targetPort: {target_port}");
        if !evidence.excerpt.contains(&quote) {
            continue;
        }
        out.push(
            Finding::new(
                PortMismatch {
                    service: name.to_string(),
                    cluster_ip: kube::str_at(service, "/spec/clusterIP").map(str::to_string),
                    port: u16::try_from(number).unwrap_or(0),
                    target_port,
                    declared: listening,
                    pods: selected
                        .iter()
                        .filter_map(|p| kube::str_at(p, "/metadata/name").map(str::to_string))
                        .collect(),
                },
                Confidence::High,
                true,
            )
            .citing(vec![cite(evidence, quote)]),
        );
    }
    out
}

/// The port numbers and names a pod's containers declare; `None` when a container declares
/// none (its ports are then unknown).
fn declared_ports(pod: &Value) -> Option<(Vec<u64>, Vec<String>)> {
    let containers = pod.pointer("/spec/containers").and_then(Value::as_array)?;
    let mut numbers = Vec::new();
    let mut names = Vec::new();
    for container in containers {
        let ports = container.get("ports").and_then(Value::as_array)?;
        if ports.is_empty() {
            return None;
        }
        for port in ports {
            numbers.extend(port.get("containerPort").and_then(Value::as_u64));
            names.extend(kube::str_at(port, "/name").map(str::to_string));
        }
    }
    Some((numbers, names))
}

#[cfg(test)]
mod tests;
