//! An alert that names a service, workload or pod but no namespace (an SLO alert labelled
//! `sloth_service=vault`, a Datadog monitor on `service:checkout-web`): the namespace is found
//! by listing that kind across the cluster and taking the one namespace where an object of that
//! name lives. Several namespaces with that name are ambiguous and recorded, not guessed.
//!
//! An alert that names no Kubernetes object at all may still point at one: a URL whose host an
//! Ingress routes to a Service (a synthetic check of `https://status.example.com/v1/health`),
//! else the workloads whose names its words spell (a heartbeat service's "the check
//! "invoice-dunning (prod)" is DOWN"), looked up across the cluster, CronJobs first.

use std::collections::BTreeSet;

use firstline_alert::AlertTarget;

use crate::evidence::Capability;
use crate::kube;
use crate::tools::{CapabilityRequest, EvidenceSource};

use super::collect::Collector;

/// The kinds to look a name up as, most likely first: what the alert says it is, else a
/// Service and then the workloads a service is usually run as.
fn kinds_for(target: &AlertTarget) -> Vec<&'static str> {
    match target.workload_kind.as_deref().map(str::to_ascii_lowercase) {
        Some(kind) if target.workload.is_some() => vec![match kind.as_str() {
            "statefulset" => "StatefulSet",
            "daemonset" => "DaemonSet",
            "cronjob" => "CronJob",
            "job" => "Job",
            _ => "Deployment",
        }],
        _ if target.service.is_some() || target.workload.is_some() => {
            vec!["Service", "Deployment", "StatefulSet"]
        }
        _ if target.pod.is_some() => vec!["Pod"],
        _ => Vec::new(),
    }
}

/// The namespace the alert's subject lives in, when the alert names a subject and no
/// namespace; `None` when it names a namespace already, nothing to look up, or the name is not
/// found in exactly one namespace.
pub async fn namespace_of<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    target: &AlertTarget,
) -> Option<String> {
    if target.namespace.is_some() {
        return None;
    }
    let name = target.subject()?.to_string();
    for kind in kinds_for(target) {
        let listed = c
            .fetch(
                CapabilityRequest::ObjectList {
                    namespace: None,
                    kind: kind.to_string(),
                    label_selector: None,
                },
                format!("the alert names `{name}` but no namespace: which namespace has a {kind} of that name"),
            )
            .await?;
        let namespaces = namespaces_with(&listed, &name);
        match namespaces.len() {
            0 => continue,
            1 => return namespaces.into_iter().next(),
            _ => {
                c.skip(
                    Capability::ObjectList,
                    format!(
                        "a {kind} named `{name}` exists in {} namespaces ({}): the alert does not \
                         say which",
                        namespaces.len(),
                        namespaces.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                );
                return None;
            }
        }
    }
    None
}

/// Kinds an alert that names nothing may mean by name, most likely first.
const SPELLED_KINDS: &[&str] = &["CronJob", "Deployment", "StatefulSet", "DaemonSet"];
/// Names shorter than this (letters and digits) are too common to be spelled on purpose.
const MIN_SPELLED: usize = 5;

/// Letters and digits only, lowercased: how a name is compared with an alert's words.
pub fn squash(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Whether squashed `words` spell `name` (of at least [`MIN_SPELLED`] letters and digits).
pub fn spells(words: &str, name: &str) -> bool {
    let name = squash(name);
    name.len() >= MIN_SPELLED && words.contains(&name)
}

/// What an alert that names no object spells in its `text`: (namespace, kind, name) of the one
/// workload across the cluster whose name its words contain — the longest such name, in the first kind that has
/// one; `None` when it names something, spells nothing, or spells two equally.
pub async fn spelled_subject<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    target: &AlertTarget,
    text: &str,
) -> Option<(String, String, String)> {
    // A managed resource known by its metric labels is looked up by them (`outside.rs`).
    if target.namespace.is_some()
        || target.subject().is_some()
        || !super::outside::identifiers(target).is_empty()
    {
        return None;
    }
    let words = squash(text);
    if words.len() < MIN_SPELLED {
        return None;
    }
    for kind in SPELLED_KINDS {
        let Some(listed) = c
            .fetch(
                CapabilityRequest::ObjectList {
                    namespace: None,
                    kind: kind.to_string(),
                    label_selector: None,
                },
                format!(
                    "the alert names no Kubernetes object: a {kind} whose name its words spell"
                ),
            )
            .await
        else {
            continue;
        };
        let mut spelled: Vec<(String, String)> = kube::objects(&listed)
            .iter()
            .filter_map(|o| {
                let name = kube::str_at(o, "/metadata/name")?;
                let namespace = kube::str_at(o, "/metadata/namespace")?;
                spells(&words, name).then(|| (namespace.to_string(), name.to_string()))
            })
            .collect();
        spelled.sort_by_key(|(_, name)| std::cmp::Reverse(squash(name).len()));
        let Some((namespace, name)) = spelled.first().cloned() else {
            continue;
        };
        let tied = spelled
            .iter()
            .filter(|(ns, n)| {
                squash(n).len() == squash(&name).len() && (ns, n) != (&namespace, &name)
            })
            .count();
        if tied > 0 {
            c.skip(
                Capability::ObjectList,
                format!(
                    "the alert's words spell {} {kind}s as well as `{namespace}/{name}`: it does \
                     not say which",
                    tied
                ),
            );
            return None;
        }
        return Some((namespace, kind.to_string(), name));
    }
    None
}

/// The hosts of the URLs a text names as what it checks (`GET https://status.example.com/…`),
/// lowercased, in order, once each — not its links (a line led by `Runbook:`, `Dashboard:`,
/// `Source:`, `Silence:`, a Slack `<url|text>` link), which point at the tools around it.
fn url_hosts(text: &str) -> Vec<String> {
    const LINKS: [&str; 9] = [
        "runbook",
        "dashboard",
        "source",
        "silence",
        "panel",
        "graph",
        "docs",
        "playbook",
        "view",
    ];
    let checked = text
        .lines()
        .filter(|line| {
            let lead = line
                .trim_start_matches(|c: char| !c.is_alphanumeric())
                .to_ascii_lowercase();
            !LINKS.iter().any(|l| lead.starts_with(l)) && !line.contains('|')
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut hosts: Vec<String> = Vec::new();
    // A dotted name: a bare `http://localhost` is no host an Ingress routes.
    for (host, _) in crate::detectors::lead::url_hosts(&checked) {
        if host.contains('.') && !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    hosts
}

/// What an alert that names no object but a URL is about (a synthetic check of
/// `https://status.example.com/v1/health`): (namespace, Service) an Ingress routes the URL's
/// host to. `None` when it names something, names no URL, no Ingress routes one, or they route
/// to several Services (recorded, not guessed).
pub async fn routed_subject<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    target: &AlertTarget,
    text: &str,
) -> Option<(String, String)> {
    if target.namespace.is_some()
        || target.subject().is_some()
        || !super::outside::identifiers(target).is_empty()
    {
        return None;
    }
    let source = target
        .source_url
        .as_deref()
        .and_then(|u| url_hosts(u).pop());
    let hosts: Vec<String> = url_hosts(text)
        .into_iter()
        .filter(|h| Some(h) != source.as_ref())
        .collect();
    if hosts.is_empty() {
        return None;
    }
    let listed = c
        .fetch(
            CapabilityRequest::ObjectList {
                namespace: None,
                kind: "Ingress".into(),
                label_selector: None,
            },
            format!(
                "the alert names no Kubernetes object but {}: which Ingress routes it, to which \
                 Service",
                hosts
                    .iter()
                    .map(|h| format!("`{h}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .await?;
    let ingresses = kube::objects(&listed);
    let mut services: Vec<(String, String)> = Vec::new();
    for host in &hosts {
        for route in kube::routes_of(&ingresses, host) {
            let service = (route.namespace, route.service);
            if !services.contains(&service) {
                services.push(service);
            }
        }
    }
    match services.as_slice() {
        [one] => Some(one.clone()),
        [] => None,
        several => {
            c.skip(
                Capability::ObjectList,
                format!(
                    "the alert's URLs are routed to {} Services: it does not say which",
                    several.len()
                ),
            );
            None
        }
    }
}

/// The namespaces of the objects in a list named `name`.
fn namespaces_with(text: &str, name: &str) -> BTreeSet<String> {
    kube::objects(text)
        .iter()
        .filter(|o| kube::str_at(o, "/metadata/name") == Some(name))
        .filter_map(|o| kube::str_at(o, "/metadata/namespace").map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespaces_an_object_of_that_name_lives_in() {
        let list = "
- {kind: Service, metadata: {name: vault, namespace: vault}}
- {kind: Service, metadata: {name: vault-ui, namespace: vault}}
- {kind: Service, metadata: {name: api, namespace: shop}}
- {kind: Service, metadata: {name: api, namespace: billing}}
";
        assert_eq!(
            namespaces_with(list, "vault"),
            BTreeSet::from(["vault".to_string()])
        );
        assert_eq!(namespaces_with(list, "api").len(), 2);
        assert!(namespaces_with(list, "checkout").is_empty());
    }

    #[test]
    fn an_alerts_urls_name_their_hosts_once_each() {
        assert_eq!(
            url_hosts(
                "GET https://Status.example.com/v1/health failed\nhttps://status.example.com/x \
                 and http://app.checklyhq.com/checks/4f1c"
            ),
            ["status.example.com", "app.checklyhq.com"]
        );
        assert!(url_hosts("no link here, only api.example.com").is_empty());
        assert!(
            url_hosts(
                "*Runbook:* <https://runbooks.example.com/x|:book:>\nDashboard: https://grafana.example.com/d/1"
            )
            .is_empty()
        );
    }

    #[test]
    fn an_alerts_words_spell_a_name_of_five_letters_or_more() {
        let words = squash("The check \"invoice-dunning (prod)\" is DOWN.");
        assert!(spells(&words, "invoice-dunning"));
        assert!(!spells(&words, "invoice-dunning-v2"));
        // Too short to be spelled on purpose.
        assert!(!spells(&words, "prod"));
    }

    #[test]
    fn a_named_kind_is_looked_up_as_that_kind_and_a_service_as_what_runs_it() {
        let target = AlertTarget {
            workload: Some("backup".into()),
            workload_kind: Some("CronJob".into()),
            ..AlertTarget::default()
        };
        assert_eq!(kinds_for(&target), ["CronJob"]);
        let target = AlertTarget {
            service: Some("vault".into()),
            ..AlertTarget::default()
        };
        assert_eq!(kinds_for(&target), ["Service", "Deployment", "StatefulSet"]);
    }
}
