//! Step planning: which requests the fixed steps make, decided from the parsed alert (numbered
//! as in the node's docs), and the reason recorded for each step the alert names no target for.
//! The reasons are shown to the on-call engineer, so they say what the alert lacked and what
//! was read instead.

use crate::evidence::Capability;
use crate::state::IncidentState;
use crate::tools::{CapabilityRequest, EvidenceSource};
use firstline_alert::AlertTarget;

use super::InvestigateOptions;
use super::collect::Collector;
use super::pods::{failed_job_pods, restart_signal};

pub(super) async fn fixed_steps<E: EvidenceSource>(
    steps: &mut Collector<'_, E>,
    state: &IncidentState,
    options: &InvestigateOptions,
) {
    let target = &state.alert.target;
    let namespace = target.namespace.clone();

    // 1. Describe the pod.
    let pod = match (&namespace, &target.pod) {
        (Some(ns), Some(pod)) => Some((ns.clone(), pod.clone())),
        _ => None,
    };
    let restarted = match &pod {
        Some((namespace, pod)) => {
            let described = steps
                .fetch(CapabilityRequest::PodDescribe {
                    namespace: namespace.clone(),
                    pod: pod.clone(),
                })
                .await;
            // Unknown restart state (no description) counts as "maybe": the previous log is
            // the one that explains a crash, so it is worth one call.
            described.as_deref().is_none_or(restart_signal)
        }
        None => match (&namespace, job_name(target)) {
            // A Job's pods are discovered below; their current logs are read there.
            (Some(_), Some(job)) => {
                steps.skip(
                    Capability::PodDescribe,
                    format!(
                        "the alert names job `{job}` but no pod; the job was described and its \
                         pods listed instead"
                    ),
                );
                steps.skip(
                    Capability::PodLogsPrevious,
                    format!(
                        "a failed pod of job `{job}` is replaced, not restarted in place; the \
                         current logs of its failed pods were read instead"
                    ),
                );
                false
            }
            _ => {
                let reason = no_pod_reason(target);
                for capability in [
                    Capability::PodDescribe,
                    Capability::PodLogsPrevious,
                    Capability::PodLogsCurrent,
                ] {
                    steps.skip(capability, reason.clone());
                }
                false
            }
        },
    };

    // 1b. A Job: describe it, then find its failed pods (newest first) and read their current
    // logs and events. A Job's failed pod is usually not restarted in place, so its *current*
    // log is the crash log.
    if let (Some(ns), Some(job)) = (&namespace, job_name(target)) {
        steps
            .fetch(CapabilityRequest::WorkloadDescribe {
                namespace: ns.clone(),
                kind: "Job".to_string(),
                name: job.to_string(),
            })
            .await;
        if pod.is_none() {
            job_pod_steps(steps, ns, job, target.container.clone(), options).await;
        }
    }

    // 2–3. The previous container's log when it restarted, then the current one.
    if let Some((namespace, pod)) = &pod {
        let logs = |previous| CapabilityRequest::PodLogs {
            namespace: namespace.clone(),
            pod: pod.clone(),
            container: target.container.clone(),
            previous,
            tail_lines: options.tail_lines,
        };
        if restarted {
            steps.fetch(logs(true)).await;
        }
        steps.fetch(logs(false)).await;
    }

    // 4. Events for the pod, else for the workload.
    let object = target.pod.clone().or_else(|| target.workload.clone());
    match (&namespace, object) {
        (Some(ns), Some(object)) => {
            steps
                .fetch(CapabilityRequest::Events {
                    namespace: ns.clone(),
                    object: Some(object),
                })
                .await;
        }
        (None, _) => steps.skip(Capability::Events, no_namespace_reason(target)),
        (Some(_), None) => steps.skip(
            Capability::Events,
            "the alert names no pod or workload whose events to read",
        ),
    }

    // 5. Deploy history of the workload (a Job has no rollout history).
    match (&namespace, &target.workload) {
        (Some(_), Some(workload)) if is_batch_kind(target) => steps.skip(
            Capability::DeployHistory,
            format!(
                "`{workload}` is a {}, which has no rollout history",
                target.workload_kind.as_deref().unwrap_or("Job")
            ),
        ),
        (Some(ns), Some(workload)) => {
            steps
                .fetch(CapabilityRequest::DeployHistory {
                    namespace: ns.clone(),
                    workload: workload.clone(),
                })
                .await;
        }
        (None, _) => steps.skip(Capability::DeployHistory, no_namespace_reason(target)),
        (Some(_), None) => steps.skip(
            Capability::DeployHistory,
            match &target.service {
                Some(service) => format!(
                    "the alert names service `{service}` but no workload; the deployment behind \
                     it was not guessed"
                ),
                None => "the alert names no workload whose deploys to read".to_string(),
            },
        ),
    }

    // 6. The alert's own metric over the alert window.
    match (&target.expression, state.alert.anchor()) {
        (Some(query), Some(anchor)) => {
            steps
                .fetch(CapabilityRequest::MetricRange {
                    query: query.clone(),
                    start: anchor - options.window_before,
                    end: anchor + options.window_after,
                    step_secs: options.metric_step_secs,
                })
                .await;
        }
        (None, _) => steps.skip(
            Capability::MetricRange,
            "the alert message carries no expression to re-run",
        ),
        (Some(_), None) => steps.skip(
            Capability::MetricRange,
            "the alert has no start time, so there is no window to query",
        ),
    }
}

/// The most pods of one Job whose logs and events are read.
pub const MAX_JOB_PODS: usize = 2;

/// The Kubernetes Job the alert is about: its workload when that is a Job.
fn job_name(target: &AlertTarget) -> Option<&str> {
    target
        .workload_kind
        .as_deref()
        .is_some_and(|k| k.eq_ignore_ascii_case("job"))
        .then_some(target.workload.as_deref())
        .flatten()
        .filter(|name| !name.is_empty())
}

fn is_batch_kind(target: &AlertTarget) -> bool {
    target
        .workload_kind
        .as_deref()
        .is_some_and(|k| k.eq_ignore_ascii_case("job") || k.eq_ignore_ascii_case("cronjob"))
}

/// Lists the Job's pods, then reads the current log and the events of at most
/// [`MAX_JOB_PODS`] failed ones, newest first.
async fn job_pod_steps<E: EvidenceSource>(
    steps: &mut Collector<'_, E>,
    namespace: &str,
    job: &str,
    container: Option<String>,
    options: &InvestigateOptions,
) {
    let listed = steps
        .fetch(CapabilityRequest::PodList {
            namespace: namespace.to_string(),
            label_selector: format!("job-name={job}"),
        })
        .await;
    let Some(listed) = listed else {
        steps.skip(
            Capability::PodLogsCurrent,
            format!("the pods of job `{job}` could not be listed, so no container log was read"),
        );
        return;
    };
    let mut pods = failed_job_pods(&listed, job);
    if pods.is_empty() {
        steps.skip(
            Capability::PodLogsCurrent,
            format!("no failed pod of job `{job}` was found, so no container log was read"),
        );
        return;
    }
    if pods.len() > MAX_JOB_PODS {
        steps.skip(
            Capability::PodLogsCurrent,
            format!(
                "job `{job}` has {} failed pods; only the newest {MAX_JOB_PODS} were read",
                pods.len()
            ),
        );
        pods.truncate(MAX_JOB_PODS);
    }
    for pod in pods {
        steps
            .fetch(CapabilityRequest::PodLogs {
                namespace: namespace.to_string(),
                pod: pod.clone(),
                container: container.clone(),
                previous: false,
                tail_lines: options.tail_lines,
            })
            .await;
        steps
            .fetch(CapabilityRequest::Events {
                namespace: namespace.to_string(),
                object: Some(pod),
            })
            .await;
    }
}

fn no_pod_reason(target: &AlertTarget) -> String {
    match (
        &target.pod,
        &target.namespace,
        &target.workload,
        &target.service,
    ) {
        (Some(pod), None, _, _) => {
            format!("the alert names pod `{pod}` but no namespace, so it could not be looked up")
        }
        (None, _, Some(workload), _) => format!(
            "the alert names {} `{workload}` but no pod; its pods were not discovered, so none \
             was described and no container log was read",
            target
                .workload_kind
                .as_deref()
                .unwrap_or("workload")
                .to_ascii_lowercase()
        ),
        (None, _, None, Some(service)) => format!(
            "the alert names service `{service}` but no pod; the pods behind it were not \
             discovered, so none was described and no container log was read"
        ),
        _ => "the alert names no pod, workload or service".to_string(),
    }
}

fn no_namespace_reason(target: &AlertTarget) -> String {
    match target.subject() {
        Some(subject) => format!("the alert names `{subject}` but no namespace"),
        None => "the alert names no namespace".to_string(),
    }
}
