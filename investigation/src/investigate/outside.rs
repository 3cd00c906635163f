//! Subjects outside the cluster: an alert about a managed resource (a cloud database, a queue,
//! a table) names it only by its exporter's labels — `dimension_DBInstanceIdentifier`,
//! `dimension_QueueName`, `dimension_TableName` as YACE and the CloudWatch exporter write them.
//! Those labels select the resource's own metrics directly, and its clients inside the cluster
//! are found by what their logs name: the log store is searched for the identifier, and the
//! pods whose streams mention it most are read like any pod. When the logs name too few, by
//! what their configuration names: the ConfigMaps whose values hold the identifier (a queue's
//! URL, a table's name, a database's host), and in their namespaces the pods that take them in
//! (`envFrom`, a volume) or hold the identifier in their own env or arguments — one pod per
//! workload, the most troubled first.

use std::collections::BTreeMap;

use chrono::Duration;
use firstline_alert::AlertTarget;

use crate::detectors::series::is_dimension;
use crate::kube::{self, PodInfo, pods_in_list, rank_pods};
use crate::state::IncidentState;
use crate::tools::{CapabilityRequest, EvidenceSource};

use super::InvestigateOptions;
use super::collect::Collector;

/// Hours of the resource's metrics read.
const WINDOW_HOURS: i64 = 6;
/// Log lines asked for.
const LOG_LINES: u32 = 50;
/// Client pods read.
const MAX_CLIENTS: usize = 2;

/// The labels that identify a managed resource: CloudWatch dimensions, as exporters label them.
pub fn identifiers(target: &AlertTarget) -> Vec<(String, String)> {
    target
        .labels
        .iter()
        .filter(|(key, value)| is_dimension(key) && !value.is_empty())
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// Reads the resource's metrics and the log lines that name it; returns the client pods to
/// read, most mentioned first.
pub async fn gather<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    state: &IncidentState,
    options: &InvestigateOptions,
) -> Vec<PodInfo> {
    let target = &state.alert.target;
    let ids = identifiers(target);
    let (Some(anchor), false) = (state.alert.anchor(), ids.is_empty()) else {
        return Vec::new();
    };
    let matchers: Vec<String> = ids
        .iter()
        .map(|(key, value)| format!("{key}=\"{value}\""))
        .collect();
    c.fetch(
        CapabilityRequest::MetricRange {
            query: format!("{{{}}}", matchers.join(", ")),
            start: anchor - Duration::hours(WINDOW_HOURS),
            end: anchor + options.window_after,
            step_secs: 180,
        },
        "the alert names a resource outside the cluster: every metric its labels select",
    )
    .await;
    let mut clients: Vec<PodInfo> = Vec::new();
    for (_, value) in &ids {
        let text = c
            .fetch(
                CapabilityRequest::LogQuery {
                    query: format!("{{namespace=~\".+\"}} |= \"{value}\""),
                    start: anchor - options.window_before,
                    end: anchor + options.window_after,
                    limit: LOG_LINES,
                },
                format!("which workloads in the cluster log about `{value}` (its clients)"),
            )
            .await;
        for (namespace, who) in streams_by_mentions(text.as_deref().unwrap_or_default()) {
            if clients.len() >= MAX_CLIENTS {
                break;
            }
            if let Some(pod) = client_pod(c, &namespace, who, value).await
                && !clients.iter().any(|p| p.name == pod.name)
            {
                clients.push(pod);
            }
        }
    }
    if clients.len() < MAX_CLIENTS {
        for (_, value) in &ids {
            for pod in configured_clients(c, value).await {
                if clients.len() < MAX_CLIENTS && !clients.iter().any(|p| p.name == pod.name) {
                    clients.push(pod);
                }
            }
        }
    }
    clients
}

/// Namespaces whose configuration a search reads.
const MAX_CONFIGURED_NAMESPACES: usize = 2;

/// The values of a ConfigMap's `data`.
fn data_holds(object: &serde_json::Value, value: &str) -> bool {
    object
        .get("data")
        .and_then(serde_json::Value::as_object)
        .is_some_and(|data| {
            data.values()
                .filter_map(serde_json::Value::as_str)
                .any(|v| v.contains(value))
        })
}

/// Whether a pod takes in one of `config_maps` or holds `value` in a container's env values,
/// command or arguments.
fn pod_uses(pod: &serde_json::Value, config_maps: &[&str], value: &str) -> bool {
    let containers = pod
        .pointer("/spec/containers")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten();
    let refs = containers
        .flat_map(|container| {
            container
                .get("envFrom")
                .and_then(serde_json::Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter_map(|e| kube::str_at(e, "/configMapRef/name"));
    let volumes = pod
        .pointer("/spec/volumes")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| kube::str_at(v, "/configMap/name"));
    kube::spec_holds(pod, value) || refs.chain(volumes).any(|n| config_maps.contains(&n))
}

/// The pods whose configuration names `value`, one per workload, the most troubled first.
async fn configured_clients<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    value: &str,
) -> Vec<PodInfo> {
    let listed = c
        .fetch(
            CapabilityRequest::ObjectList {
                namespace: None,
                kind: "ConfigMap".into(),
                label_selector: None,
            },
            format!("no log names `{value}` enough: which configuration does (ConfigMaps)"),
        )
        .await
        .unwrap_or_default();
    let mut holding: Vec<(String, String)> = Vec::new();
    for object in kube::objects(&listed)
        .iter()
        .filter(|o| data_holds(o, value))
    {
        if let (Some(namespace), Some(name)) = (
            kube::str_at(object, "/metadata/namespace"),
            kube::str_at(object, "/metadata/name"),
        ) {
            holding.push((namespace.to_string(), name.to_string()));
        }
    }
    let mut namespaces: Vec<&str> = Vec::new();
    for (namespace, _) in &holding {
        if !namespaces.contains(&namespace.as_str()) {
            namespaces.push(namespace);
        }
    }
    let mut clients: Vec<PodInfo> = Vec::new();
    for namespace in namespaces.into_iter().take(MAX_CONFIGURED_NAMESPACES) {
        let config_maps: Vec<&str> = holding
            .iter()
            .filter(|(ns, _)| ns == namespace)
            .map(|(_, name)| name.as_str())
            .collect();
        let Some(pods) = c
            .fetch(
                CapabilityRequest::PodList {
                    namespace: namespace.to_string(),
                    label_selector: None,
                },
                format!(
                    "the pods of `{namespace}` that take in {} or name `{value}` themselves",
                    config_maps
                        .iter()
                        .map(|n| format!("ConfigMap `{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .await
        else {
            continue;
        };
        let using: Vec<String> = kube::objects(&pods)
            .iter()
            .filter(|p| pod_uses(p, &config_maps, value))
            .filter_map(|p| kube::str_at(p, "/metadata/name").map(str::to_string))
            .collect();
        let mut infos: Vec<PodInfo> = pods_in_list(&pods)
            .into_iter()
            .filter(|p| using.contains(&p.name))
            .collect();
        rank_pods(&mut infos);
        let mut workloads: Vec<String> = Vec::new();
        for pod in infos {
            let workload = kube::deployment_of(&pod).unwrap_or_else(|| pod.name.clone());
            if !workloads.contains(&workload) {
                workloads.push(workload);
                // Named, not listed: each client is read, troubled or not.
                clients.push(PodInfo {
                    name: pod.name,
                    namespace: Some(namespace.to_string()),
                    ..PodInfo::default()
                });
            }
        }
    }
    clients
}

/// Who a stream is: a pod by name, or an app whose pods are listed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Who {
    Pod(String),
    App(String),
}

/// The streams of a log answer (`[{"line", "labels": {…}}]`), by how many lines each gave,
/// most first.
fn streams_by_mentions(text: &str) -> Vec<(String, Who)> {
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str::<serde_json::Value>(text)
    else {
        return Vec::new();
    };
    let mut counts: BTreeMap<(String, Who), usize> = BTreeMap::new();
    for labels in items.iter().filter_map(|i| i.get("labels")) {
        let get = |k: &str| labels.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let Some(namespace) = get("namespace") else {
            continue;
        };
        let who = match (
            get("pod"),
            get("app").or_else(|| get("app_kubernetes_io_name")),
        ) {
            (Some(pod), _) => Who::Pod(pod),
            (None, Some(app)) => Who::App(app),
            _ => continue,
        };
        *counts.entry((namespace, who)).or_default() += 1;
    }
    let mut ranked: Vec<((String, Who), usize)> = counts.into_iter().collect();
    ranked.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    ranked.into_iter().map(|(key, _)| key).collect()
}

/// The pod a client stream is: named, or the most troubled pod of its app.
async fn client_pod<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    who: Who,
    resource: &str,
) -> Option<PodInfo> {
    match who {
        Who::Pod(name) => Some(PodInfo {
            name,
            namespace: Some(namespace.to_string()),
            ..PodInfo::default()
        }),
        Who::App(app) => {
            let listed = c
                .fetch(
                    CapabilityRequest::PodList {
                        namespace: namespace.to_string(),
                        label_selector: Some(format!("app={app}")),
                    },
                    format!("`{app}` logs about `{resource}`: its pods"),
                )
                .await?;
            let mut pods = pods_in_list(&listed);
            rank_pods(&mut pods);
            pods.into_iter().next()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cloudwatch_dimensions_identify_the_resource() {
        let target = AlertTarget {
            labels: [
                ("alertname".to_string(), "RDS DB load high".to_string()),
                (
                    "dimension_DBInstanceIdentifier".to_string(),
                    "claims-prod".to_string(),
                ),
                ("region".to_string(), "eu-central-1".to_string()),
            ]
            .into(),
            ..AlertTarget::default()
        };
        assert_eq!(
            identifiers(&target),
            [(
                "dimension_DBInstanceIdentifier".to_string(),
                "claims-prod".to_string()
            )]
        );
    }

    #[test]
    fn a_client_is_found_by_the_configuration_that_names_the_resource() {
        let config = serde_json::json!({
            "kind": "ConfigMap",
            "metadata": {"name": "order-events-consumer-config", "namespace": "fulfilment"},
            "data": {"ORDER_EVENTS_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/4812/order-events"},
        });
        assert!(data_holds(&config, "order-events"));
        assert!(
            !data_holds(&config, "carts-prod"),
            "only its values, never its name"
        );

        let taking_it_in = serde_json::json!({"spec": {"containers": [
            {"name": "consumer", "envFrom": [{"configMapRef": {"name": "order-events-consumer-config"}}]}
        ]}});
        let naming_it = serde_json::json!({"spec": {"containers": [
            {"name": "backfill", "args": ["--table", "carts-prod", "--segments", "8"]}
        ]}});
        let mounting_it = serde_json::json!({"spec": {
            "containers": [{"name": "app"}],
            "volumes": [{"name": "cfg", "configMap": {"name": "order-events-consumer-config"}}],
        }});
        let unrelated = serde_json::json!({"spec": {"containers": [
            {"name": "web", "env": [{"name": "MODE", "value": "prod"}]}
        ]}});
        let config_maps = ["order-events-consumer-config"];
        assert!(pod_uses(&taking_it_in, &config_maps, "order-events"));
        assert!(pod_uses(&naming_it, &[], "carts-prod"));
        assert!(pod_uses(&mounting_it, &config_maps, "order-events"));
        assert!(!pod_uses(&unrelated, &config_maps, "order-events"));
    }

    #[test]
    fn the_streams_that_mention_it_most_come_first() {
        let answer = r#"[
            {"line": "a", "labels": {"namespace": "claims", "app": "claims-api"}},
            {"line": "b", "labels": {"namespace": "claims", "pod": "claims-worker-0"}},
            {"line": "c", "labels": {"namespace": "claims", "pod": "claims-worker-0"}},
            {"line": "d", "labels": {"app": "no-namespace"}}
        ]"#;
        assert_eq!(
            streams_by_mentions(answer),
            [
                (
                    "claims".to_string(),
                    Who::Pod("claims-worker-0".to_string())
                ),
                ("claims".to_string(), Who::App("claims-api".to_string())),
            ]
        );
        assert!(streams_by_mentions("not json").is_empty());
    }
}
