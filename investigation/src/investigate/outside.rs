//! Subjects outside the cluster: an alert about a managed resource (a cloud database, a queue,
//! a table) names it only by its exporter's labels — `dimension_DBInstanceIdentifier`,
//! `dimension_QueueName`, `dimension_TableName` as YACE and the CloudWatch exporter write them.
//! Those labels select the resource's own metrics directly, and its clients inside the cluster
//! are found by what their logs name: the log store is searched for the identifier, and the
//! pods whose streams mention it most are read like any pod.

use std::collections::BTreeMap;

use chrono::Duration;
use firstline_alert::AlertTarget;

use crate::kube::{PodInfo, pods_in_list, rank_pods};
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
        .filter(|(key, value)| key.starts_with("dimension_") && !value.is_empty())
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
