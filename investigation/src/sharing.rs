//! Whether a later alert shares a group's root without a round of its own (issue 26: a storm's
//! tool calls grow with its causes, not its alerts). Only a root that makes *everything on it*
//! fail can be shared this way: a node that is NotReady takes every pod on it down. An alert
//! shares that root only when all of these hold, each read, never assumed:
//!
//! - what it reports is something a lost node accounts for (pods not ready, a workload short of
//!   replicas, a node's own state, or an alert whose kind says nothing narrower) — an OOM kill or
//!   a crash loop on that node is its own incident;
//! - it is about the same cluster, when both say;
//! - the node is still NotReady now (read again: a node that came back shares nothing);
//! - the alert's pods that are not ready — its pod, its workload's, or those behind its Service —
//!   all run on that node (a Service failing on other replicas too is something else).
//!
//! Any other root needs the alert's own round, whose root is then compared ([`crate::root`]).
//! What the check read is the evidence the linked thread's line cites.

use firstline_alert::AlertTarget;
use serde::{Deserialize, Serialize};

use crate::detectors::{Kind, Symptom, alert_symptom, same_resource};
use crate::explain::Chain;
use crate::kube::{PodInfo, conditions_of, objects, pod_of, pods_in_list, selector_of};
use crate::tools::{CapabilityRequest, EvidenceSource, Fetched, ToolOutput};

/// How a root is shared by objects that depend on it, as a group stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Sharing {
    /// Every pod on `node` (of `cluster`, when the alert said), which is NotReady.
    PodsOnNode {
        node: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cluster: Option<String>,
    },
}

/// How the headline `chain`'s root (found for `alert`) is shared, when its cause makes everything
/// on it fail.
pub fn sharing(chain: &Chain<'_>, alert: &AlertTarget) -> Option<Sharing> {
    match chain.cause.kind() {
        Kind::NodeNotReady => chain.cause.resource().map(|node| Sharing::PodsOnNode {
            node,
            cluster: alert.cluster.clone(),
        }),
        _ => None,
    }
}

/// Whether `alert` reports something a lost node accounts for.
pub fn may_share(alert: &AlertTarget) -> bool {
    let symptom = alert_symptom(alert);
    symptom == Symptom::Any || Kind::NodeNotReady.spec().accounts_for.contains(&symptom)
}

/// Whether `alert` is about something that shares `sharing`'s root: the line its thread shows
/// as evidence, or `None` (then the alert gets a round of its own). Reads the node, then at most
/// two more objects.
pub async fn shares(
    tools: &impl EvidenceSource,
    alert: &AlertTarget,
    sharing: &Sharing,
) -> Option<String> {
    let Sharing::PodsOnNode { node, cluster } = sharing;
    let other_cluster = matches!((cluster, &alert.cluster), (Some(a), Some(b)) if a != b);
    if other_cluster || !may_share(alert) {
        return None;
    }
    let names_node = alert.node.as_deref() == Some(node.as_str());
    let subject = (alert.pod.is_some() || alert.workload.is_some() || alert.service.is_some())
        .then_some(alert.namespace.as_deref())
        .flatten();
    if !names_node && subject.is_none() {
        return None;
    }
    let read = found(
        tools,
        CapabilityRequest::ObjectGet {
            namespace: None,
            kind: "Node".to_string(),
            name: node.clone(),
        },
    )
    .await?;
    let ready = objects(&read.text)
        .first()
        .map(conditions_of)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.kind == "Ready")?;
    if ready.status == "True" {
        return None;
    }
    let still = format!(
        "node `{node}` is still Ready={} ({} `{}`)",
        ready.status, read.server, read.tool
    );
    let Some(namespace) = subject else {
        return Some(format!("the alert names node `{node}`; {still}"));
    };
    let (pods, whose, output) = pods_of(tools, alert, namespace).await?;
    let not_ready: Vec<&PodInfo> = pods.iter().filter(|p| p.ready == Some(false)).collect();
    let all_on_node = !not_ready.is_empty()
        && not_ready
            .iter()
            .all(|p| p.node.as_deref() == Some(node.as_str()));
    if !all_on_node {
        return None;
    }
    let names: Vec<String> = not_ready
        .iter()
        .take(3)
        .map(|p| format!("`{namespace}/{}`", p.name))
        .collect();
    let more = match not_ready.len() {
        n if n > names.len() => format!(" and {} more", n - names.len()),
        _ => String::new(),
    };
    Some(format!(
        "{} {}{whose}{more} {} not ready on node `{node}` ({} `{}`), and {still}",
        if not_ready.len() == 1 { "pod" } else { "pods" },
        names.join(", "),
        if not_ready.len() == 1 { "is" } else { "are" },
        output.server,
        output.tool
    ))
}

/// The alert's pods: its pod, its workload's (its namespace's, named after it), or those behind
/// its Service (the Service, then the pods its selector picks); what they are, and the read.
async fn pods_of(
    tools: &impl EvidenceSource,
    alert: &AlertTarget,
    namespace: &str,
) -> Option<(Vec<PodInfo>, String, ToolOutput)> {
    match (
        alert.pod.as_deref(),
        alert.workload.as_deref(),
        alert.service.as_deref(),
    ) {
        (Some(pod), _, _) => {
            let request = CapabilityRequest::PodDescribe {
                namespace: namespace.to_string(),
                pod: pod.to_string(),
            };
            let output = found(tools, request).await?;
            let pods = pod_of(&output.text, pod).into_iter().collect();
            Some((pods, String::new(), output))
        }
        (None, Some(workload), _) => {
            let request = CapabilityRequest::PodList {
                namespace: namespace.to_string(),
                label_selector: None,
            };
            let output = found(tools, request).await?;
            let pods = pods_in_list(&output.text)
                .into_iter()
                .filter(|p| same_resource(Some(&p.name), Some(workload)))
                .collect();
            Some((pods, format!(" of `{workload}`"), output))
        }
        (None, None, Some(service)) => {
            let request = CapabilityRequest::ObjectGet {
                namespace: Some(namespace.to_string()),
                kind: "Service".to_string(),
                name: service.to_string(),
            };
            let selector = selector_of(&found(tools, request).await?.text)?;
            let request = CapabilityRequest::PodList {
                namespace: namespace.to_string(),
                label_selector: Some(selector),
            };
            let output = found(tools, request).await?;
            let pods = pods_in_list(&output.text);
            Some((pods, format!(" behind Service `{service}`"), output))
        }
        (None, None, None) => None,
    }
}

/// What `request` found, if anything.
async fn found(tools: &impl EvidenceSource, request: CapabilityRequest) -> Option<ToolOutput> {
    match tools.fetch(request).await {
        Fetched::Found(output) => Some(output),
        Fetched::Missing(_) => None,
    }
}
