//! NetworkPolicies that admit no traffic from a client to a ready Service's pods: the other end
//! is up (its Endpoints list ready addresses) and the client's connections still fail, because
//! once any policy selects those pods for ingress, only what some rule admits gets through —
//! a `default-deny` synced into the namespace drops everyone it does not list.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`PolicyDenies`] | cause | the policies of the Service's namespace, read this round, select its pods for ingress and no rule of theirs admits the client's namespace and pod |
//!
//! Read from structure only: the client's failing connection (`dependencies.rs`' finding with
//! the ready Service it resolves to), the Service's selector and pods, the client pod's labels
//! and namespace, and the namespace's NetworkPolicy objects. A namespace is matched by the
//! label every namespace carries, `kubernetes.io/metadata.name`. Whatever cannot be judged
//! from that — `matchExpressions`, `ipBlock` peers, a namespace's other labels — counts as
//! admitting, so a policy is blamed only when it plainly admits no one like the client. Ports
//! are not compared: a rule admitting the client on another port counts as admitting it.
//!
//! What explains what: the policy explains the client's failing connections to that Service.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite,
};
use crate::kube;

/// Policies that select a ready Service's pods and admit nothing from the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyDenies {
    /// The policies that select the Service's pods for ingress.
    pub policies: Vec<String>,
    pub namespace: String,
    pub service: String,
    /// The client pod whose connections fail, and its namespace.
    pub client: String,
    pub client_namespace: String,
    /// What their rules do admit, as a reader says it (`namespace ingress-nginx`).
    pub admits: Vec<String>,
    /// The failing endpoint as the client names it.
    pub endpoint: String,
}

impl Payload for PolicyDenies {
    const SPEC: KindSpec = KindSpec {
        name: "network-policy-denies",
        role: Role::Cause,
        verified_when: "the namespace's NetworkPolicies, read this round, select the ready \
                        Service's pods for ingress and no rule admits the client",
        accounts_for: &[
            Symptom::Errors,
            Symptom::Latency,
            Symptom::Unavailable,
            Symptom::Any,
        ],
    };

    fn example() -> Self {
        Self {
            policies: vec!["default-deny-ingress".into()],
            namespace: "inventory".into(),
            service: "inventory".into(),
            client: "checkout-api-7d9f6c8b54-2lq8n".into(),
            client_namespace: "checkout".into(),
            admits: vec!["namespace ingress-nginx".into()],
            endpoint: "inventory.inventory.svc.cluster.local:8080".into(),
        }
    }

    fn title(&self) -> String {
        format!(
            "NetworkPolicy `{}` in `{}` admits no traffic from `{}` to Service `{}`'s pods",
            self.policies.join("`, `"),
            self.namespace,
            self.client_namespace,
            self.service
        )
    }

    fn detail(&self) -> String {
        let admits = if self.admits.is_empty() {
            "nothing at all".to_string()
        } else {
            format!("only {}", self.admits.join(", "))
        };
        format!(
            "Service `{}` has ready endpoints, yet `{}` cannot connect to {}: the policies of `{}` \
             that select its pods admit {admits}, not pod `{}` in namespace `{}`, so its \
             connections are dropped.",
            self.service,
            self.client,
            self.endpoint,
            self.namespace,
            self.client,
            self.client_namespace
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Service, self.service.clone()))
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.namespace == other.namespace
            && self.service == other.service
            && self.client_namespace == other.client_namespace
    }

    fn step(&self, _scene: &Scene) -> String {
        format!(
            "Find who added or changed `{}` (`kubectl -n {} get networkpolicy -o yaml`, the GitOps \
             change that synced it) and admit namespace `{}` to Service `{}`'s pods in an \
             ingress rule, or revert it.",
            self.policies.join("`, `"),
            self.namespace,
            self.client_namespace,
            self.service
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        matches!(&effect.fact, Fact::Dependency(d)
            if d.pod.as_deref() == Some(self.client.as_str())
                && d.peer_ready.as_deref() == Some(self.service.as_str()))
    }
}

/// A `matchLabels` selector that can be judged: `None` when it has `matchExpressions`.
fn match_labels(selector: Option<&Value>) -> Option<Map<String, Value>> {
    let Some(selector) = selector else {
        return Some(Map::new());
    };
    if selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .is_some_and(|e| !e.is_empty())
    {
        return None;
    }
    Some(
        selector
            .get("matchLabels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    )
}

/// Whether a selector that can be judged picks `labels` (an empty one picks all).
fn picks(selector: &Map<String, Value>, labels: &BTreeMap<String, String>) -> bool {
    selector.is_empty() || kube::selects(selector, labels)
}

/// What one `from` peer admits, for the client: `Some(true)` admits it, `Some(false)` does
/// not, `None` cannot be judged (an `ipBlock`, `matchExpressions`). Its words for the reply.
fn peer_admits(
    peer: &Value,
    policy_namespace: &str,
    client_namespace: &str,
    client_labels: &BTreeMap<String, String>,
) -> (Option<bool>, String) {
    if peer.get("ipBlock").is_some() {
        return (None, "an address block".to_string());
    }
    let pods = match_labels(peer.get("podSelector"));
    let namespaces = peer.get("namespaceSelector").map(|s| match_labels(Some(s)));
    let (Some(pods), Some(namespaces)) = (pods, namespaces.unwrap_or(Some(Map::new()))) else {
        return (None, "peers chosen by expressions".to_string());
    };
    let pod_words = if pods.is_empty() {
        String::new()
    } else {
        format!(" pods {}", words(&pods))
    };
    let namespace_label = BTreeMap::from([(
        "kubernetes.io/metadata.name".to_string(),
        client_namespace.to_string(),
    )]);
    let in_namespace = match peer.get("namespaceSelector") {
        None => client_namespace == policy_namespace,
        Some(_) if namespaces.is_empty() => true,
        Some(_) => {
            // Only the name label can be judged; a selector on any other label might match.
            if namespaces
                .keys()
                .any(|k| k != "kubernetes.io/metadata.name")
            {
                return (None, format!("namespaces {}", words(&namespaces)));
            }
            kube::selects(&namespaces, &namespace_label)
        }
    };
    let said = match peer.get("namespaceSelector") {
        None => format!("its own namespace's{pod_words}"),
        Some(_) if namespaces.is_empty() => format!("every namespace's{pod_words}"),
        Some(_) => format!(
            "namespace {}{pod_words}",
            namespaces
                .get("kubernetes.io/metadata.name")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
    };
    (Some(in_namespace && picks(&pods, client_labels)), said)
}

/// `app=web, tier=front`.
fn words(selector: &Map<String, Value>) -> String {
    selector
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let policies = round.objects("NetworkPolicy");
    if policies.is_empty() {
        return Vec::new();
    }
    let pods = round.pods();
    let mut out: Vec<Finding> = Vec::new();
    for finding in round.found {
        let Fact::Dependency(d) = &finding.fact else {
            continue;
        };
        // A refused or reset connection was answered: no policy dropped it.
        if !d.may_be_dropped() {
            continue;
        }
        let (Some(service), Some(namespace), Some(client), Some(endpoint)) = (
            d.peer_ready.as_deref(),
            d.peer_namespace.as_deref(),
            d.pod.as_deref(),
            d.endpoint.as_deref(),
        ) else {
            continue;
        };
        let Some((_, client_pod)) = pods
            .iter()
            .find(|(_, p)| kube::str_at(p, "/metadata/name") == Some(client))
        else {
            continue;
        };
        let Some(client_namespace) = kube::str_at(client_pod, "/metadata/namespace") else {
            continue;
        };
        let client_labels = kube::labels_of(client_pod);
        let Some(selector) = round
            .objects("Service")
            .into_iter()
            .map(|(_, s)| s)
            .find(|s| {
                kube::str_at(s, "/metadata/name") == Some(service)
                    && kube::str_at(s, "/metadata/namespace").is_none_or(|ns| ns == namespace)
            })
            .and_then(|s| s.pointer("/spec/selector").and_then(Value::as_object))
        else {
            continue;
        };
        // The Service's pods' labels: a pod of its namespace it selects, read this round; else
        // only the selector's own, and then a policy selecting on other labels cannot be judged.
        let read_pod = pods
            .iter()
            .filter(|(_, p)| {
                kube::str_at(p, "/metadata/namespace").is_none_or(|ns| ns == namespace)
            })
            .map(|(_, p)| kube::labels_of(p))
            .find(|labels| kube::selects(selector, labels));
        let labels_known = read_pod.is_some();
        let target = read_pod.unwrap_or_else(|| {
            selector
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        });
        let mut selecting: Vec<(&crate::evidence::Evidence, &str)> = Vec::new();
        let mut admits: Vec<String> = Vec::new();
        let mut admitted = false;
        for (evidence, policy) in &policies {
            if kube::str_at(policy, "/metadata/namespace").is_some_and(|ns| ns != namespace) {
                continue;
            }
            let Some(name) = kube::str_at(policy, "/metadata/name") else {
                continue;
            };
            let types = policy
                .pointer("/spec/policyTypes")
                .and_then(Value::as_array);
            let for_ingress = types.is_none_or(|t| t.iter().any(|t| t.as_str() == Some("Ingress")));
            if !for_ingress {
                continue;
            }
            let judged = match_labels(policy.pointer("/spec/podSelector"))
                .filter(|s| labels_known || s.keys().all(|k| target.contains_key(k)));
            let Some(pod_selector) = judged else {
                admitted = true;
                continue;
            };
            if !picks(&pod_selector, &target) {
                continue;
            }
            selecting.push((evidence, name));
            for rule in policy
                .pointer("/spec/ingress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let peers = rule.get("from").and_then(Value::as_array);
                let Some(peers) = peers.filter(|p| !p.is_empty()) else {
                    admitted = true;
                    continue;
                };
                for peer in peers {
                    let (admits_client, said) =
                        peer_admits(peer, namespace, client_namespace, &client_labels);
                    admitted |= admits_client != Some(false);
                    if !admits.contains(&said) {
                        admits.push(said);
                    }
                }
            }
        }
        if selecting.is_empty() || admitted {
            continue;
        }
        let refs = selecting
            .iter()
            .filter_map(|(evidence, name)| {
                let whole = format!("name: {name}");
                evidence
                    .excerpt
                    .lines()
                    .find(|l| l.trim_start_matches([' ', '-']) == whole)
                    .map(|l| cite(evidence, l.trim().to_string()))
            })
            .collect::<Vec<_>>();
        if refs.is_empty() {
            continue;
        }
        out.push(
            Finding::new(
                PolicyDenies {
                    policies: selecting.iter().map(|(_, n)| n.to_string()).collect(),
                    namespace: namespace.to_string(),
                    service: service.to_string(),
                    client: client.to_string(),
                    client_namespace: client_namespace.to_string(),
                    admits,
                    endpoint: endpoint.to_string(),
                },
                Confidence::High,
                true,
            )
            .citing(refs),
        );
    }
    out
}

#[cfg(test)]
mod tests;
