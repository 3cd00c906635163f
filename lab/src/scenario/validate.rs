//! What serde cannot check: exactly-one-of fields, cross-references (a pod's deployment, owner
//! and revision, a log's pod and container, a job's CronJob, a span's parent), and required
//! alternatives (`query` or `metric`, in `metrics` and `after_action.metrics`); [`cluster`]
//! checks pod IPs and the cluster objects (Ingresses, NetworkPolicies, PodDisruptionBudgets,
//! node journals). A problem names the field as written (`pods[0].initContainers[1].state`).

mod cluster;

use std::collections::BTreeMap;

use super::ScenarioSpec;
use super::pods::{ContainerSpec, PodSpec};
use super::telemetry::MetricSpec;

/// A field and what is wrong with it.
pub(super) type Problem = (String, String);

fn problem(field: String, message: &str) -> Result<(), Problem> {
    Err((field, message.to_string()))
}

/// Checks a parsed scenario.
pub(super) fn validate(spec: &ScenarioSpec) -> Result<(), Problem> {
    if spec.alert.text.trim().is_empty() {
        return problem("alert.text".into(), "must not be empty");
    }
    for (i, pod) in spec.pods.iter().enumerate() {
        validate_pod(spec, i, pod)?;
    }
    validate_template_hashes(spec)?;
    validate_logs(spec)?;
    validate_workloads(spec)?;
    cluster::validate_cluster(spec)?;
    validate_telemetry(spec)?;
    for (i, any) in spec.expect.must_mention.iter().enumerate() {
        if any.is_empty() || any.iter().any(|p| p.trim().is_empty()) {
            return problem(
                format!("expect.must_mention[{i}]"),
                "needs at least one non-empty phrase",
            );
        }
    }
    Ok(())
}

fn validate_containers(
    field: &str,
    containers: &[ContainerSpec],
    seen: &mut Vec<String>,
) -> Result<(), Problem> {
    for (j, container) in containers.iter().enumerate() {
        if seen.contains(&container.name) {
            return problem(
                format!("{field}[{j}].name"),
                "another container of the pod has this name",
            );
        }
        seen.push(container.name.clone());
        for (which, state) in [
            ("state", &container.state),
            ("lastState", &container.last_state),
        ] {
            if let Some(state) = state {
                let set = [
                    state.waiting.is_some(),
                    state.running.is_some(),
                    state.terminated.is_some(),
                ]
                .iter()
                .filter(|b| **b)
                .count();
                if set != 1 {
                    return problem(
                        format!("{field}[{j}].{which}"),
                        "set exactly one of waiting, running, terminated",
                    );
                }
            }
        }
    }
    Ok(())
}

fn validate_pod(spec: &ScenarioSpec, i: usize, pod: &PodSpec) -> Result<(), Problem> {
    if pod.containers.is_empty() {
        return problem(
            format!("pods[{i}].containers"),
            "a pod needs at least one container",
        );
    }
    let mut names = Vec::new();
    validate_containers(
        &format!("pods[{i}].initContainers"),
        &pod.init_containers,
        &mut names,
    )?;
    validate_containers(
        &format!("pods[{i}].containers"),
        &pod.containers,
        &mut names,
    )?;
    if let Some(deployment) = &pod.deployment {
        let Some(found) = spec
            .deployments
            .iter()
            .find(|d| &d.name == deployment && d.namespace == pod.namespace)
        else {
            return problem(
                format!("pods[{i}].deployment"),
                "names a deployment that is not in `deployments` (same namespace)",
            );
        };
        if pod.owner.is_some() {
            return problem(
                format!("pods[{i}].owner"),
                "set `deployment` or `owner`, not both",
            );
        }
        if let Some(revision) = pod.revision
            && !(1..=found.revisions.len()).contains(&revision)
        {
            return problem(
                format!("pods[{i}].revision"),
                "must be between 1 and the deployment's number of revisions",
            );
        }
    } else if pod.revision.is_some() {
        return problem(
            format!("pods[{i}].revision"),
            "only a pod of a `deployment` has a revision",
        );
    }
    if let Some(owner) = &pod.owner {
        let listed = match owner.kind.as_str() {
            "ReplicaSet" => true,
            "StatefulSet" => spec
                .statefulsets
                .iter()
                .any(|s| s.name == owner.name && s.namespace == pod.namespace),
            "DaemonSet" => spec
                .daemonsets
                .iter()
                .any(|d| d.name == owner.name && d.namespace == pod.namespace),
            "Job" => spec
                .jobs
                .iter()
                .any(|j| j.name == owner.name && j.namespace == pod.namespace),
            _ => {
                return problem(
                    format!("pods[{i}].owner.kind"),
                    "must be ReplicaSet, StatefulSet, DaemonSet or Job (a Deployment's pod: `deployment`)",
                );
            }
        };
        if !listed {
            return problem(
                format!("pods[{i}].owner.name"),
                "names an object that is not listed under its kind (same namespace)",
            );
        }
    }
    Ok(())
}

/// Pods that set `pod-template-hash` name their ReplicaSet: pods of one revision must agree.
fn validate_template_hashes(spec: &ScenarioSpec) -> Result<(), Problem> {
    let mut hashes: BTreeMap<(String, String, usize), &str> = BTreeMap::new();
    for (i, pod) in spec.pods.iter().enumerate() {
        let (Some(deployment), Some(hash)) = (&pod.deployment, pod.labels.get("pod-template-hash"))
        else {
            continue;
        };
        let latest = spec
            .deployments
            .iter()
            .find(|d| &d.name == deployment && d.namespace == pod.namespace)
            .map_or(0, |d| d.revisions.len());
        let key = (
            pod.namespace.clone(),
            deployment.clone(),
            pod.revision.unwrap_or(latest),
        );
        if hashes.get(&key).is_some_and(|seen| *seen != hash.as_str()) {
            return problem(
                format!("pods[{i}].labels.pod-template-hash"),
                "differs from another pod's of the same deployment revision",
            );
        }
        hashes.insert(key, hash);
    }
    Ok(())
}

fn validate_logs(spec: &ScenarioSpec) -> Result<(), Problem> {
    for (i, log) in spec.logs.iter().enumerate() {
        let Some(pod) = spec.pods.iter().find(|p| p.name == log.pod) else {
            return problem(
                format!("logs[{i}].pod"),
                "names a pod that is not in `pods`",
            );
        };
        match &log.container {
            Some(c)
                if !pod
                    .containers
                    .iter()
                    .chain(&pod.init_containers)
                    .any(|pc| &pc.name == c) =>
            {
                return problem(
                    format!("logs[{i}].container"),
                    "names a container the pod does not have",
                );
            }
            None if pod.containers.len() > 1 => {
                return problem(
                    format!("logs[{i}].container"),
                    "the pod has several containers: name one",
                );
            }
            _ => {}
        }
        if log.current.is_none() && log.previous.is_none() {
            return problem(format!("logs[{i}]"), "set `current`, `previous` or both");
        }
    }
    Ok(())
}

fn validate_workloads(spec: &ScenarioSpec) -> Result<(), Problem> {
    for (i, deployment) in spec.deployments.iter().enumerate() {
        if deployment.revisions.is_empty() {
            return problem(
                format!("deployments[{i}].revisions"),
                "needs at least one revision",
            );
        }
    }
    for (i, job) in spec.jobs.iter().enumerate() {
        if let Some(owner) = &job.owner {
            if owner.kind != "CronJob" {
                return problem(
                    format!("jobs[{i}].owner.kind"),
                    "a Job's owner is a CronJob",
                );
            }
            if !spec
                .cronjobs
                .iter()
                .any(|c| c.name == owner.name && c.namespace == job.namespace)
            {
                return problem(
                    format!("jobs[{i}].owner.name"),
                    "names a CronJob that is not in `cronjobs` (same namespace)",
                );
            }
        }
    }
    for (i, hpa) in spec.horizontalpodautoscalers.iter().enumerate() {
        if hpa.min_replicas.is_some_and(|min| min > hpa.max_replicas) {
            return problem(
                format!("horizontalpodautoscalers[{i}].minReplicas"),
                "must not exceed maxReplicas",
            );
        }
    }
    Ok(())
}

fn validate_metrics(field: &str, metrics: &[MetricSpec]) -> Result<(), Problem> {
    for (i, metric) in metrics.iter().enumerate() {
        let set = [
            metric.points.is_some(),
            metric.step.is_some(),
            metric.constant.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if set != 1 {
            return problem(
                format!("{field}[{i}]"),
                "set exactly one of points, step, constant",
            );
        }
        if metric.query.is_none() && metric.metric.is_none() {
            return problem(format!("{field}[{i}]"), "set `query`, `metric` or both");
        }
    }
    Ok(())
}

/// `after_action`: its series as `metrics[]`'s, its logs naming a workload.
fn validate_after_action(spec: &ScenarioSpec) -> Result<(), Problem> {
    let Some(after) = &spec.after_action else {
        return Ok(());
    };
    validate_metrics("after_action.metrics", &after.metrics)?;
    for (i, log) in after.logs.iter().enumerate() {
        if log.workload.trim().is_empty() {
            return problem(
                format!("after_action.logs[{i}].workload"),
                "must name the Deployment, StatefulSet, DaemonSet or ReplicaSet of the new pods",
            );
        }
    }
    Ok(())
}

fn validate_telemetry(spec: &ScenarioSpec) -> Result<(), Problem> {
    validate_metrics("metrics", &spec.metrics)?;
    validate_after_action(spec)?;
    for (i, stream) in spec.log_streams.iter().enumerate() {
        if stream.query.is_none() && stream.labels.is_empty() {
            return problem(format!("log_streams[{i}]"), "set `query`, `labels` or both");
        }
    }
    for (i, trace) in spec.traces.iter().enumerate() {
        for (j, span) in trace.spans.iter().enumerate() {
            if let Some(parent) = &span.parent
                && !trace.spans.iter().any(|s| &s.name == parent)
            {
                return problem(
                    format!("traces[{i}].spans[{j}].parent"),
                    "names no span of this trace",
                );
            }
        }
    }
    for (i, raw) in spec.raw_tool_results.iter().enumerate() {
        if raw.text.is_some() && raw.error.is_some() {
            return problem(
                format!("raw_tool_results[{i}]"),
                "set `text` or `error`, not both",
            );
        }
        if raw.text.is_none() && raw.error.is_none() && raw.delay_ms.is_none() {
            return problem(
                format!("raw_tool_results[{i}]"),
                "set `text`, `error` or `delay_ms`",
            );
        }
        if raw.tool.trim().is_empty() {
            return problem(format!("raw_tool_results[{i}].tool"), "must not be empty");
        }
    }
    Ok(())
}
