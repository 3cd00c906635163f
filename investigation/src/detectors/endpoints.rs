//! Services with no ready endpoint, from their Endpoints objects.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`NoEndpoints`] | cause when no pod matches the selector; a consequence when its pods are there but not ready, or fail | the Endpoints object lists no ready address |
//!
//! A Service whose selector matches no pod is broken by its own spec (a label renamed on one
//! side); one whose pods are all unready, or not running because an earlier part saw them fail
//! (Pending, crashing, not pulled), only passes their failure on — to the clients whose calls to
//! its name or cluster IP fail, which it explains (and a crash loop of one of its unready pods
//! explains it).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lead::{names_service, split_endpoint};
use super::refusals::RefusedState;
use super::text::cite_values;
use super::{
    Confidence, Fact, Finding, Kind, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject,
    Symptom, same_pod,
};
use crate::kube;

/// A Service with no ready endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoEndpoints {
    pub service: String,
    /// Pods behind it that are not ready.
    pub not_ready: usize,
    /// The names of those the Endpoints name (`targetRef`).
    #[serde(default)]
    pub not_ready_pods: Vec<String>,
    /// An earlier part saw this Service's pods fail: that, not its selector, empties it.
    #[serde(default)]
    pub pods_failing: bool,
    /// Its cluster IP, when the round read the Service: clients' logs may name it so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ip: Option<String>,
    /// Public hosts its clients call that reach it: an Ingress in the round routes them here,
    /// or, when none routes them anywhere, its pods are configured with them as their own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
}

impl NoEndpoints {
    /// Its pods exist but fail: the Service passes their failure on.
    fn passes_on(&self) -> bool {
        self.not_ready > 0 || self.pods_failing
    }
}

impl Payload for NoEndpoints {
    const SPEC: KindSpec = KindSpec {
        name: "no-endpoints",
        role: Role::Cause,
        verified_when: "the Service's Endpoints list no ready address",
        accounts_for: &[Symptom::Errors, Symptom::Unavailable],
    };

    fn example() -> Self {
        Self {
            service: "metrics".into(),
            not_ready: 0,
            not_ready_pods: Vec::new(),
            pods_failing: false,
            cluster_ip: None,
            hosts: Vec::new(),
        }
    }

    fn title(&self) -> String {
        if self.pods_failing && self.not_ready == 0 {
            format!(
                "Service `{}` has no endpoints: its pods are not running",
                self.service
            )
        } else if self.not_ready > 0 {
            format!("Service `{}` has no ready endpoint", self.service)
        } else {
            format!(
                "Service `{}` has no endpoints: its selector matches no pod",
                self.service
            )
        }
    }

    fn detail(&self) -> String {
        if self.pods_failing && self.not_ready == 0 {
            format!(
                "Service `{}` has no address behind it while its pods fail to run: requests \
                 to it fail until they do.",
                self.service
            )
        } else if self.not_ready > 0 {
            format!(
                "Service `{}` has {} pod(s) behind it, none ready: requests to it fail.",
                self.service, self.not_ready
            )
        } else {
            format!(
                "Service `{}` has no pod behind it: its selector matches no running pod, so \
                 requests to it (and scrapes of it) fail.",
                self.service
            )
        }
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Service, self.service.clone()))
    }

    fn role(&self) -> Role {
        Role::cause_unless_it_follows(self.passes_on())
    }

    /// The calls its clients cannot make: to its name or its cluster IP, and to a public host
    /// routed to it that the proxy answers with nothing behind it.
    fn explains(&self, effect: &super::Finding) -> bool {
        match &effect.fact {
            super::Fact::Dependency(d) => d
                .endpoint
                .as_deref()
                .is_some_and(|e| names_service(e, &self.service, self.cluster_ip.as_deref())),
            super::Fact::Refusal(r) if r.state == RefusedState::Unavailable => {
                r.dependency.as_deref().is_some_and(|d| {
                    let (host, _) = split_endpoint(d);
                    self.hosts.contains(&host)
                })
            }
            _ => false,
        }
    }

    fn step(&self, scene: &Scene) -> String {
        if self.passes_on() {
            return format!(
                "Find why the pods behind Service `{}` are not ready (`kubectl -n {} get pods \
                 -o wide`, their readiness probes and logs).",
                self.service, scene.namespace
            );
        }
        format!(
            "Compare Service `{}`'s selector with its pods' labels (`kubectl -n {} get pods \
             --show-labels`) and fix whichever changed; make sure the pods are ready.",
            self.service, scene.namespace
        )
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    round
        .objects("Endpoints")
        .into_iter()
        .filter_map(|(evidence, object)| no_endpoints(round, evidence, object))
        .collect()
}

/// Failures that keep a pod from running or from being ready.
const POD_DOWN: [Kind; 8] = [
    Kind::CrashLoop,
    Kind::OomKilled,
    Kind::Exited,
    Kind::ImagePull,
    Kind::Unschedulable,
    Kind::ConfigError,
    Kind::Disrupted,
    Kind::QuotaExceeded,
];

/// A Service's Endpoints with no ready address.
fn no_endpoints(
    round: &Round<'_>,
    evidence: &crate::evidence::Evidence,
    object: &serde_json::Value,
) -> Option<Finding> {
    let name = kube::str_at(object, "/metadata/name")?;
    let count = |key: &str| {
        object
            .get("subsets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| s.get(key).and_then(Value::as_array))
            .map(Vec::len)
            .sum::<usize>()
    };
    if count("addresses") > 0 {
        return None;
    }
    let mut f = Finding::new(
        NoEndpoints {
            service: name.to_string(),
            not_ready: count("notReadyAddresses"),
            not_ready_pods: object
                .get("subsets")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| s.get("notReadyAddresses").and_then(Value::as_array))
                .flatten()
                .filter_map(|a| kube::str_at(a, "/targetRef/name"))
                .map(str::to_string)
                .collect(),
            pods_failing: round.found.iter().any(|f| {
                POD_DOWN.contains(&f.kind()) && same_pod(f.resource().as_deref(), Some(name))
            }),
            cluster_ip: round
                .objects("Service")
                .into_iter()
                .find(|(_, service)| kube::str_at(service, "/metadata/name") == Some(name))
                .and_then(|(_, service)| kube::str_at(service, "/spec/clusterIP"))
                .filter(|ip| *ip != "None")
                .map(str::to_string),
            hosts: hosts_reaching(round, object, name),
        },
        Confidence::High,
        true,
    );
    cite_values(
        &mut f,
        evidence,
        &["notReadyAddresses", "subsets: []", "subsets", name],
    );
    (!f.refs.is_empty()).then_some(f)
}

/// The public hosts clients got a gateway status for ([`RefusedState::Unavailable`]) that
/// reach Service `name`: routed here by an Ingress in the round; or, when no Ingress in the
/// round routes them, served as its own ([`kube::serves_host`]) by a pod this Service lists
/// that is not the refusing client.
fn hosts_reaching(round: &Round<'_>, endpoints: &Value, name: &str) -> Vec<String> {
    let namespace = kube::str_at(endpoints, "/metadata/namespace");
    let ingresses: Vec<&Value> = round
        .objects("Ingress")
        .into_iter()
        .map(|(_, ingress)| ingress)
        .collect();
    let own_pods: Vec<&str> = endpoints
        .get("subsets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|s| {
            ["addresses", "notReadyAddresses"]
                .into_iter()
                .filter_map(|key| s.get(key).and_then(Value::as_array))
                .flatten()
        })
        .filter_map(|a| kube::str_at(a, "/targetRef/name"))
        .collect();
    let mut hosts: Vec<String> = Vec::new();
    let unanswered = round.found.iter().filter_map(|f| match &f.fact {
        Fact::Refusal(r) if r.state == RefusedState::Unavailable => {
            r.dependency.as_deref().map(|d| (d, r.pod.as_deref()))
        }
        _ => None,
    });
    for (dependency, client) in unanswered {
        let (host, _) = split_endpoint(dependency);
        if hosts.contains(&host) {
            continue;
        }
        let routes = kube::routes_of(ingresses.iter().copied(), &host);
        let reaches = if routes.is_empty() {
            round.pods().into_iter().any(|(_, pod)| {
                kube::str_at(pod, "/metadata/name")
                    .is_some_and(|n| own_pods.contains(&n) && Some(n) != client)
                    && kube::serves_host(pod, &host)
            })
        } else {
            routes
                .iter()
                .any(|r| r.service == name && namespace.is_none_or(|ns| ns == r.namespace))
        };
        if reaches {
            hosts.push(host);
        }
    }
    hosts
}

#[cfg(test)]
mod tests;
