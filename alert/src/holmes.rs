//! Adapter from HolmesGPT's `investigate_request.json` to an [`AlertTarget`].
//!
//! HolmesGPT's evaluation fixtures (third_party/peer/holmesgpt) describe each incident as a
//! request: `title`, `description`, `subject { name, subject_type | kind, namespace, node,
//! container, cluster, labels, annotations }` and an optional `context.issue_type`. The lab's
//! evaluation runs those fixtures through Firstline, so the request must become the same
//! target a Slack alert would.
//!
//! Their subjects are loosely typed: a subject of type `deployment` may carry a *pod* name
//! (`analytics-exporter-fast-76897854c-cw5wh`), so the pod-name shape decides, not the type.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{AlertStatus, AlertTarget, deployment_from_pod_name};

/// Why a request could not be read at all (malformed JSON). A request with missing fields is
/// not an error: those fields end up in [`AlertTarget::unknown`].
#[derive(Debug, thiserror::Error)]
pub enum HolmesRequestError {
    #[error("investigate_request is not valid JSON of the expected shape: {0}")]
    Json(#[from] serde_json::Error),
}

#[derive(Debug, Default, Deserialize)]
struct InvestigateRequest {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    subject: Subject,
    #[serde(default)]
    context: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
struct Subject {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    subject_type: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    node: Option<String>,
    #[serde(default)]
    container: Option<String>,
    #[serde(default)]
    cluster: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

/// Builds a target from the text of an `investigate_request.json`.
pub fn from_investigate_request(json: &str) -> Result<AlertTarget, HolmesRequestError> {
    let request: InvestigateRequest = serde_json::from_str(json)?;
    Ok(target_from_request(request))
}

fn target_from_request(request: InvestigateRequest) -> AlertTarget {
    let subject = request.subject;
    let mut target = AlertTarget {
        namespace: non_empty(subject.namespace),
        node: non_empty(subject.node),
        container: non_empty(subject.container),
        cluster: non_empty(subject.cluster),
        labels: subject.labels.unwrap_or_default(),
        annotations: subject.annotations.unwrap_or_default(),
        // A request to investigate is made about something that is wrong now.
        status: Some(AlertStatus::Firing),
        description: non_empty(request.description),
        ..AlertTarget::default()
    };
    if let Some(source) = non_empty(request.source) {
        target.notes.push(format!("alert source: {source}"));
    }

    let title = non_empty(request.title);
    let issue_type = request
        .context
        .get("issue_type")
        .and_then(|v| v.as_str())
        .map(str::to_string);
    // An alert name is an identifier (`KubePodCrashLooping`); a sentence title is a summary.
    target.alertname = issue_type.or_else(|| {
        title
            .as_deref()
            .map(|t| t.trim().trim_end_matches('.'))
            .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .map(str::to_string)
    });
    target.summary = title;

    let kind = subject
        .kind
        .or(subject.subject_type)
        .map(|k| k.to_ascii_lowercase());
    if let Some(name) = non_empty(subject.name) {
        let looks_like_pod = deployment_from_pod_name(&name).is_some();
        match kind.as_deref() {
            Some("pod") => target.pod = Some(name),
            _ if looks_like_pod => {
                if kind.as_deref().is_some_and(|k| k != "pod") {
                    target.notes.push(format!(
                        "subject `{name}` has a pod name's shape; treated as a pod"
                    ));
                }
                target.pod = Some(name);
            }
            Some("deployment") => set_workload(&mut target, name, "Deployment"),
            Some("statefulset") => set_workload(&mut target, name, "StatefulSet"),
            Some("daemonset") => set_workload(&mut target, name, "DaemonSet"),
            Some("job") => set_workload(&mut target, name, "Job"),
            Some("cronjob") => set_workload(&mut target, name, "CronJob"),
            Some("service") => target.service = Some(name),
            Some("node") => {
                target.node.get_or_insert(name);
            }
            _ => target.pod = Some(name),
        }
    }
    target.resolve()
}

fn set_workload(target: &mut AlertTarget, name: String, kind: &str) {
    target.workload = Some(name);
    target.workload_kind = Some(kind.to_string());
}

fn non_empty(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}
