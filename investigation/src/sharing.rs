//! Whether a later alert shares a group's root without a round of its own (issue 26: a storm's
//! tool calls grow with its causes, not its alerts). Only a root that makes *everything on it*
//! fail can be shared this way: a node that is NotReady takes every pod on it down, so a pod
//! alert whose pod (or whose workload's or Service's pod) runs there, not ready, is that node's
//! consequence. Any other root needs the alert's own round, whose root is then compared
//! ([`crate::root`]). The check reads at most two objects through the round's tools; what it read
//! is the evidence the linked thread's line cites.

use firstline_alert::AlertTarget;
use serde::{Deserialize, Serialize};

use crate::detectors::{Kind, same_resource};
use crate::explain::Chain;
use crate::kube::{PodInfo, pod_of, pods_in_list, selector_of};
use crate::tools::{CapabilityRequest, EvidenceSource, Fetched, ToolOutput};

/// How a root is shared by objects that depend on it, as a group stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Sharing {
    /// Every pod on `node`, which is NotReady.
    PodsOnNode { node: String },
}

/// How the headline `chain`'s root is shared, when its cause makes everything on it fail.
pub fn sharing(chain: &Chain<'_>) -> Option<Sharing> {
    match chain.cause.kind() {
        Kind::NodeNotReady => chain
            .cause
            .resource()
            .map(|node| Sharing::PodsOnNode { node }),
        _ => None,
    }
}

/// Whether `alert` is about something that shares `sharing`'s root: the line its thread shows
/// as evidence, or `None` (then the alert gets a round of its own). Reads at most two objects:
/// the alert's pod, its workload's pods (its namespace's, named after it), or a Service's pods
/// (the Service, then the pods its selector picks).
pub async fn shares(
    tools: &impl EvidenceSource,
    alert: &AlertTarget,
    sharing: &Sharing,
) -> Option<String> {
    let Sharing::PodsOnNode { node } = sharing;
    if alert.node.as_deref() == Some(node.as_str()) {
        return Some(format!("the alert names node `{node}`"));
    }
    let namespace = alert.namespace.as_deref()?;
    let (pods, whose, read) = match (
        alert.pod.as_deref(),
        alert.workload.as_deref(),
        alert.service.as_deref(),
    ) {
        (Some(pod), _, _) => {
            let output = found(
                tools,
                CapabilityRequest::PodDescribe {
                    namespace: namespace.to_string(),
                    pod: pod.to_string(),
                },
            )
            .await?;
            let pods: Vec<PodInfo> = pod_of(&output.text, pod).into_iter().collect();
            (pods, String::new(), output)
        }
        (None, Some(workload), _) => {
            let output = found(
                tools,
                CapabilityRequest::PodList {
                    namespace: namespace.to_string(),
                    label_selector: None,
                },
            )
            .await?;
            let pods = pods_in_list(&output.text)
                .into_iter()
                .filter(|p| same_resource(Some(&p.name), Some(workload)))
                .collect();
            (pods, format!(" of `{workload}`"), output)
        }
        (None, None, Some(service)) => {
            let object = found(
                tools,
                CapabilityRequest::ObjectGet {
                    namespace: Some(namespace.to_string()),
                    kind: "Service".to_string(),
                    name: service.to_string(),
                },
            )
            .await?;
            let selector = selector_of(&object.text)?;
            let output = found(
                tools,
                CapabilityRequest::PodList {
                    namespace: namespace.to_string(),
                    label_selector: Some(selector),
                },
            )
            .await?;
            (
                pods_in_list(&output.text),
                format!(" behind Service `{service}`"),
                output,
            )
        }
        (None, None, None) => return None,
    };
    pods.into_iter()
        .find(|pod| pod.node.as_deref() == Some(node.as_str()) && pod.ready != Some(true))
        .map(|pod| {
            format!(
                "pod `{namespace}/{}`{whose} runs on node `{node}` and is not ready ({} `{}`)",
                pod.name, read.server, read.tool
            )
        })
}

/// What `request` found, if anything.
async fn found(tools: &impl EvidenceSource, request: CapabilityRequest) -> Option<ToolOutput> {
    match tools.fetch(request).await {
        Fetched::Found(output) => Some(output),
        Fetched::Missing(_) => None,
    }
}
