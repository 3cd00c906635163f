//! Subjects named in prose, for alerts that carry no label set: monitoring services and
//! uptime checkers (Datadog, Healthchecks.io, Cronitor, blackbox probes, Zabbix-style
//! webhooks) write the Kubernetes object into their text or their tags instead.
//!
//! Read only after the structured formats, and only into labels the message did not state:
//!
//! - Datadog tags: `kube_namespace:notify`, `kube_deployment:gateway`, `pod_name:…`,
//!   `kube_stateful_set:…`, `kube_daemon_set:…`, `kube_cronjob:…`, `kube_job:…`,
//!   `kube_service:…`, `kube_container_name:…`;
//! - an object as kubectl names it: `CronJob revops/crm-contact-sync`, `deployment shop/cart`;
//! - `namespace shop`, `namespace: shop`, `(namespace accounting, cluster prod-eu-1)`;
//! - `key: value` segments of a line split by ` | ` or ` · ` (`Cluster: a | namespace: b`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

/// Datadog's Kubernetes tags, and the label each one means.
const DATADOG_TAGS: &[(&str, &str)] = &[
    ("kube_namespace", "namespace"),
    ("kube_deployment", "deployment"),
    ("kube_stateful_set", "statefulset"),
    ("kube_statefulset", "statefulset"),
    ("kube_daemon_set", "daemonset"),
    ("kube_daemonset", "daemonset"),
    ("kube_cronjob", "cronjob"),
    ("kube_job", "job_name"),
    ("pod_name", "pod"),
    ("kube_service", "service"),
    ("kube_container_name", "container"),
    ("service", "service"),
];

static DATADOG_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s,{(·|])([a-z_]+):([a-z0-9][a-z0-9.-]*[a-z0-9])\b").expect("static regex")
});
static KIND_SLASH_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(deployment|statefulset|daemonset|cronjob|job|pod|service)\s+([a-z0-9][a-z0-9-]*)/([a-z0-9][a-z0-9.-]*[a-z0-9])\b")
        .expect("static regex")
});
static NAMESPACE_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bnamespace\s*[:=]?\s*[`'\x22]?([a-z0-9][a-z0-9-]{0,62})\b")
        .expect("static regex")
});
static SEGMENT_KEY_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[*_]*([A-Za-z][A-Za-z0-9_]*)[*_]*\s*:\s*[`*_]*([A-Za-z0-9][A-Za-z0-9._/-]*)[`*_]*\s*$")
        .expect("static regex")
});

/// Words that follow "namespace" in prose without being one (`the namespace is …`).
const NOT_A_NAMESPACE: &[&str] = &[
    "is", "of", "the", "and", "for", "in", "to", "was", "has", "not", "none", "unknown",
];

/// Adds the subjects `text` names in prose to `labels`, never overriding one already there.
pub fn read_subjects(text: &str, labels: &mut BTreeMap<String, String>) {
    let mut add = |key: &str, value: &str| {
        labels
            .entry(key.to_string())
            .or_insert_with(|| value.to_string());
    };
    for caps in DATADOG_TAG.captures_iter(text) {
        if let Some((_, label)) = DATADOG_TAGS.iter().find(|(tag, _)| *tag == &caps[1]) {
            add(label, &caps[2]);
        }
    }
    for caps in KIND_SLASH_NAME.captures_iter(text) {
        let label = match caps[1].to_ascii_lowercase().as_str() {
            "job" => "job_name".to_string(),
            kind => kind.to_string(),
        };
        add("namespace", &caps[2]);
        add(&label, &caps[3]);
    }
    for line in text.lines() {
        if !(line.contains(" | ") || line.contains(" · ")) {
            continue;
        }
        for segment in line.split(" | ").flat_map(|s| s.split(" · ")) {
            if let Some(caps) = SEGMENT_KEY_VALUE.captures(segment) {
                let key = caps[1].to_ascii_lowercase();
                if matches!(
                    key.as_str(),
                    "namespace" | "service" | "cluster" | "pod" | "node"
                ) {
                    add(&key, &caps[2]);
                }
            }
        }
    }
    if let Some(namespace) = NAMESPACE_WORD
        .captures_iter(text)
        .map(|caps| caps[1].to_ascii_lowercase())
        .find(|word| !NOT_A_NAMESPACE.contains(&word.as_str()))
    {
        add("namespace", &namespace);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::new();
        read_subjects(text, &mut labels);
        labels
    }

    #[test]
    fn datadog_tags_name_the_kubernetes_objects() {
        let labels = read(
            "[Triggered on {kube_namespace:notify,kube_deployment:notification-gateway}] gateway OOMKilled\n\
             Tags: env:prod · kube_cluster_name:prod-eu-2 · kube_namespace:notify · version:5.2.1",
        );
        assert_eq!(labels.get("namespace").map(String::as_str), Some("notify"));
        assert_eq!(
            labels.get("deployment").map(String::as_str),
            Some("notification-gateway")
        );
        assert!(!labels.contains_key("env"), "{labels:?}");
    }

    #[test]
    fn an_object_as_kubectl_names_it() {
        let labels = read("Check: crm-contact-sync — CronJob revops/crm-contact-sync on prod-eu-1");
        assert_eq!(labels.get("namespace").map(String::as_str), Some("revops"));
        assert_eq!(
            labels.get("cronjob").map(String::as_str),
            Some("crm-contact-sync")
        );
    }

    #[test]
    fn a_namespace_in_a_sentence_or_a_segment() {
        let labels = read("Host: ledger-pg-1 (namespace accounting, cluster prod-eu-1)");
        assert_eq!(
            labels.get("namespace").map(String::as_str),
            Some("accounting")
        );
        let labels = read("Cluster: prod-eu-1 | namespace: shop | service: search-web");
        assert_eq!(labels.get("namespace").map(String::as_str), Some("shop"));
        assert_eq!(
            labels.get("service").map(String::as_str),
            Some("search-web")
        );
        assert_eq!(labels.get("cluster").map(String::as_str), Some("prod-eu-1"));
        let labels = read("the namespace is not known yet");
        assert!(!labels.contains_key("namespace"), "{labels:?}");
    }

    #[test]
    fn what_the_message_states_wins() {
        let mut labels = BTreeMap::from([("namespace".to_string(), "payments".to_string())]);
        read_subjects("kube_namespace:other namespace shop", &mut labels);
        assert_eq!(labels["namespace"], "payments");
    }
}
