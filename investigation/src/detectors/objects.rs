//! Detectors over Kubernetes objects beyond pods: nodes (Ready, pressure conditions, taints),
//! volume claims and volumes (pending, failed, provisioning errors), resource quotas (exceeded),
//! autoscalers (at their maximum) and Services (no ready endpoint). All read fields and events
//! written by controllers, so a finding can be a verified cause; every quote is a verbatim line
//! of the evidence.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::text::{looks_like_injection, quote_line};
use super::{Confidence, DetectionContext, DetectorKind, Finding, cite};
use crate::evidence::{Capability, Evidence};
use crate::investigate::kube::{self, Condition};

static STORAGE_CLASS_MISSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"storageclass\.storage\.k8s\.io \\?"([^"\\]+)\\?" not found"#)
        .expect("static regex")
});
static PROVISIONING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bProvisioningFailed\b|failed to provision volume|no persistent volumes available for this claim and no storage class is set|\bFailedBinding\b")
        .expect("static regex")
});
static QUOTA: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)exceeded quota:\s*([A-Za-z0-9.-]+)(?:,\s*requested:\s*([^,]+(?:,[^,]+?)*?),\s*used:)?")
        .expect("static regex")
});

/// Object detectors over one evidence item.
pub(super) fn detect(evidence: &Evidence, ctx: &DetectionContext) -> Vec<Finding> {
    let mut out = Vec::new();
    match evidence.capability {
        Capability::ObjectGet | Capability::ObjectList | Capability::Other(_) => {
            for object in kube::objects(&evidence.excerpt) {
                match kube::str_at(&object, "/kind") {
                    Some("Node") => out.extend(node(evidence, &object)),
                    Some("PersistentVolumeClaim") => out.extend(claim(evidence, &object)),
                    Some("PersistentVolume") => out.extend(volume(evidence, &object)),
                    Some("HorizontalPodAutoscaler") => out.extend(autoscaler(evidence, &object)),
                    Some("Endpoints") => out.extend(endpoints(evidence, &object)),
                    Some("Deployment" | "StatefulSet" | "DaemonSet") if ctx.about_replicas => {
                        out.extend(workload_available(evidence, &object, ctx))
                    }
                    _ => {}
                }
            }
        }
        Capability::PodDescribe => {
            for object in kube::objects(&evidence.excerpt) {
                out.extend(recovered(evidence, &object, ctx));
            }
        }
        Capability::Events => {
            out.extend(provisioning(evidence, ctx));
            out.extend(quota(evidence, ctx));
        }
        _ => {}
    }
    out
}

fn finding(
    detector: DetectorKind,
    title: String,
    detail: String,
    resource: Option<&str>,
) -> Finding {
    Finding {
        detector,
        title,
        detail,
        confidence: Confidence::High,
        verified: true,
        resource: resource.map(str::to_string),
        refs: Vec::new(),
        at: None,
    }
}

/// The first excerpt line holding `needle` (a value read from the object), as a quote.
fn line_with(evidence: &Evidence, needle: &str) -> Option<String> {
    if needle.is_empty() {
        return None;
    }
    evidence
        .excerpt
        .lines()
        .find(|l| l.contains(needle) && !looks_like_injection(l))
        .map(quote_line)
        .filter(|q| !q.is_empty())
}

fn cite_values(finding: &mut Finding, evidence: &Evidence, needles: &[&str]) {
    for needle in needles {
        if finding.refs.len() >= 3 {
            break;
        }
        if let Some(quote) = line_with(evidence, needle)
            && !finding.refs.iter().any(|c| c.quote == quote)
        {
            finding.refs.push(cite(evidence, quote));
        }
    }
}

/// A node that is not Ready, or under memory, disk or PID pressure.
fn node(evidence: &Evidence, object: &Value) -> Vec<Finding> {
    let name = kube::str_at(object, "/metadata/name");
    let conditions = kube::conditions_of(object);
    let mut out = Vec::new();
    if let Some(ready) = conditions
        .iter()
        .find(|c| c.kind == "Ready" && c.status != "True")
    {
        let why = explain(ready);
        let mut f = finding(
            DetectorKind::NodeNotReady,
            format!(
                "Node `{}` is NotReady ({})",
                name.unwrap_or("?"),
                if ready.status == "Unknown" {
                    "status unknown"
                } else {
                    "Ready=False"
                }
            ),
            format!(
                "Node `{}` reports Ready={}{}; its pods are not running there until it recovers, \
                 and after the eviction timeout they are evicted.",
                name.unwrap_or("?"),
                ready.status,
                why.map(|w| format!(": {w}")).unwrap_or_default()
            ),
            name,
        );
        let needles: Vec<&str> = [ready.message.as_deref(), ready.reason.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        cite_values(&mut f, evidence, &needles);
        cite_values(
            &mut f,
            evidence,
            &[
                "node.kubernetes.io/unreachable",
                "node.kubernetes.io/not-ready",
            ],
        );
        if !f.refs.is_empty() {
            out.push(f);
        }
    }
    for pressure in conditions.iter().filter(|c| {
        c.status == "True"
            && matches!(
                c.kind.as_str(),
                "MemoryPressure" | "DiskPressure" | "PIDPressure"
            )
    }) {
        let detector = if pressure.kind == "DiskPressure" {
            DetectorKind::DiskPressure
        } else {
            DetectorKind::NodePressure
        };
        let mut f = finding(
            detector,
            format!("Node `{}` has {}", name.unwrap_or("?"), pressure.kind),
            format!(
                "Node `{}` reports {}{}; the kubelet evicts pods to relieve it and the scheduler \
                 avoids the node.",
                name.unwrap_or("?"),
                pressure.kind,
                explain(pressure)
                    .map(|w| format!(": {w}"))
                    .unwrap_or_default()
            ),
            name,
        );
        let needles: Vec<&str> = [pressure.message.as_deref(), pressure.reason.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        cite_values(&mut f, evidence, &needles);
        if !f.refs.is_empty() {
            out.push(f);
        }
    }
    out
}

fn explain(condition: &Condition) -> Option<String> {
    match (&condition.reason, &condition.message) {
        (Some(r), Some(m)) => Some(format!("{r} ({m})")),
        (Some(r), None) => Some(r.clone()),
        (None, Some(m)) => Some(m.clone()),
        (None, None) => None,
    }
}

/// How long a container must have run cleanly since its last restart to count as recovered.
const STABLE_FOR: chrono::Duration = chrono::Duration::minutes(30);

/// Containers that restarted before but have run ready and unrestarted for a while: the
/// trouble the alert saw is over (for now).
fn recovered(evidence: &Evidence, pod: &Value, ctx: &DetectionContext) -> Vec<Finding> {
    let name = kube::str_at(pod, "/metadata/name");
    let statuses = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for status in &statuses {
        let restarts = status
            .get("restartCount")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let ready = status.get("ready").and_then(Value::as_bool) == Some(true);
        let Some(started) = kube::str_at(status, "/state/running/startedAt") else {
            continue;
        };
        let Ok(started_at) = chrono::DateTime::parse_from_rfc3339(started) else {
            continue;
        };
        let started_at = started_at.with_timezone(&chrono::Utc);
        let running_for = evidence.fetched_at - started_at;
        // Only an instance that came back around or after the alert ended what the alert saw;
        // one running since long before it says nothing about the alert.
        let came_back = ctx
            .alert_start
            .is_some_and(|alert| started_at >= alert - chrono::Duration::minutes(10));
        if restarts == 0 || !ready || running_for < STABLE_FOR || !came_back {
            continue;
        }
        let container = kube::str_at(status, "/name").unwrap_or("?");
        let mut f = finding(
            DetectorKind::Recovered,
            format!(
                "Container `{container}` recovered: running and ready since {} UTC",
                started_at.format("%H:%M")
            ),
            format!(
                "Container `{container}` of `{}` restarted {restarts} times, but has been running \
                 and ready since {} UTC ({} min, no restart since): what the alert saw is not \
                 happening now.",
                name.unwrap_or("?"),
                started_at.format("%H:%M"),
                running_for.num_minutes()
            ),
            name,
        );
        f.verified = false;
        cite_values(
            &mut f,
            evidence,
            &[&format!("startedAt: {started}"), started],
        );
        if !f.refs.is_empty() {
            out.push(f);
        }
    }
    out
}

/// A workload whose every desired replica is updated, ready and available again, with a
/// condition that changed since shortly before the alert (its rollout finished): the replica
/// shortfall the alert saw has ended. Not a cause, and only read for replica alerts.
fn workload_available(evidence: &Evidence, object: &Value, ctx: &DetectionContext) -> Vec<Finding> {
    let (Some(kind), Some(name), _) = kube::identity(object) else {
        return Vec::new();
    };
    let count = |path: &str| object.pointer(path).and_then(Value::as_u64);
    let (desired, counts) = if kind == "DaemonSet" {
        (
            count("/status/desiredNumberScheduled"),
            [
                count("/status/numberReady"),
                count("/status/numberAvailable"),
                count("/status/updatedNumberScheduled"),
            ],
        )
    } else {
        (
            count("/spec/replicas"),
            [
                count("/status/readyReplicas"),
                count("/status/availableReplicas"),
                count("/status/updatedReplicas"),
            ],
        )
    };
    let Some(desired) = desired.filter(|d| *d > 0) else {
        return Vec::new();
    };
    let settled = count("/status/observedGeneration")
        .zip(count("/metadata/generation"))
        .is_none_or(|(observed, generation)| observed >= generation);
    if !settled || counts.iter().any(|c| *c != Some(desired)) {
        return Vec::new();
    }
    let recent = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| kube::str_at(c, "/status") == Some("True"))
        .filter_map(|c| {
            kube::str_at(c, "/lastUpdateTime").or_else(|| kube::str_at(c, "/lastTransitionTime"))
        })
        .filter_map(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
        .map(|at| at.with_timezone(&chrono::Utc))
        .max();
    let came_back = recent
        .zip(ctx.alert_start)
        .is_some_and(|(changed, alert)| changed >= alert - chrono::Duration::minutes(10));
    let Some(changed) = recent.filter(|_| came_back) else {
        return Vec::new();
    };
    let mut f = finding(
        DetectorKind::Recovered,
        format!(
            "{kind} `{name}` recovered: all {desired} of {desired} replicas updated, ready and \
             available since {} UTC",
            changed.format("%H:%M")
        ),
        format!(
            "{kind} `{name}` has all {desired} of {desired} desired replicas updated, ready and \
             available, and its rollout settled at {} UTC: the replica shortfall the alert saw is \
             no longer there.",
            changed.format("%H:%M")
        ),
        Some(name),
    );
    f.verified = false;
    let ready_key = if kind == "DaemonSet" {
        "numberReady:"
    } else {
        "readyReplicas:"
    };
    cite_values(&mut f, evidence, &[ready_key, "NewReplicaSetAvailable"]);
    if f.refs.is_empty() {
        return Vec::new();
    }
    vec![f]
}

/// A claim stuck Pending (a symptom: the provisioning events say why) or Lost.
fn claim(evidence: &Evidence, object: &Value) -> Vec<Finding> {
    let name = kube::str_at(object, "/metadata/name");
    let phase = kube::str_at(object, "/status/phase").unwrap_or("");
    if !matches!(phase, "Pending" | "Lost") {
        return Vec::new();
    }
    let class = kube::str_at(object, "/spec/storageClassName");
    let mut f = finding(
        DetectorKind::VolumeClaim,
        format!("Volume claim `{}` is {phase}", name.unwrap_or("?")),
        format!(
            "PersistentVolumeClaim `{}` is {phase}{}: a pod that mounts it cannot start.",
            name.unwrap_or("?"),
            class
                .map(|c| format!(" (storage class `{c}`)"))
                .unwrap_or_default()
        ),
        name,
    );
    f.verified = phase == "Lost";
    f.confidence = Confidence::Medium;
    cite_values(&mut f, evidence, &[&format!("phase: {phase}"), phase]);
    if let Some(class) = class {
        cite_values(&mut f, evidence, &[class]);
    }
    (!f.refs.is_empty()).then_some(f).into_iter().collect()
}

/// A PersistentVolume in phase Failed.
fn volume(evidence: &Evidence, object: &Value) -> Vec<Finding> {
    let name = kube::str_at(object, "/metadata/name");
    if kube::str_at(object, "/status/phase") != Some("Failed") {
        return Vec::new();
    }
    let message = kube::str_at(object, "/status/message");
    let claim = kube::str_at(object, "/spec/claimRef/name");
    let mut f = finding(
        DetectorKind::VolumeFailed,
        format!("PersistentVolume `{}` has failed", name.unwrap_or("?")),
        format!(
            "PersistentVolume `{}`{} is in phase Failed{}: pods cannot mount it.",
            name.unwrap_or("?"),
            claim
                .map(|c| format!(" (bound to claim `{c}`)"))
                .unwrap_or_default(),
            message.map(|m| format!(": {m}")).unwrap_or_default()
        ),
        claim.or(name),
    );
    cite_values(
        &mut f,
        evidence,
        &[message.unwrap_or(""), "phase: Failed", "Failed"],
    );
    (!f.refs.is_empty()).then_some(f).into_iter().collect()
}

/// An autoscaler at its maximum replicas.
fn autoscaler(evidence: &Evidence, object: &Value) -> Vec<Finding> {
    let name = kube::str_at(object, "/metadata/name");
    let max = object.pointer("/spec/maxReplicas").and_then(Value::as_u64);
    let current = object
        .pointer("/status/currentReplicas")
        .and_then(Value::as_u64);
    let limited = kube::conditions_of(object)
        .into_iter()
        .find(|c| c.kind == "ScalingLimited" && c.status == "True");
    let (Some(max), Some(current)) = (max, current) else {
        return Vec::new();
    };
    if current < max && limited.is_none() {
        return Vec::new();
    }
    let target = kube::str_at(object, "/spec/scaleTargetRef/name");
    let scales_on = scaling_metrics(object);
    let mut f = finding(
        DetectorKind::AutoscalerMaxed,
        format!(
            "Autoscaler `{}` is at its maximum of {max} replicas",
            name.unwrap_or("?")
        ),
        format!(
            "HorizontalPodAutoscaler `{}` runs {current} of at most {max} replicas of `{}`{}: \
             the load it scales on is more than {max} replicas can carry.{}",
            name.unwrap_or("?"),
            target.unwrap_or("its target"),
            limited
                .as_ref()
                .and_then(|c| c.reason.as_deref())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
            scales_on
                .iter()
                .map(|m| format!(" {m}"))
                .collect::<String>()
        ),
        target.or(name),
    );
    f.confidence = Confidence::Medium;
    let max_text = format!("maxReplicas: {max}");
    let current_text = format!("currentReplicas: {current}");
    let limited_reason = limited
        .as_ref()
        .and_then(|c| c.reason.clone())
        .unwrap_or_default();
    cite_values(
        &mut f,
        evidence,
        &[&max_text, &current_text, &limited_reason],
    );
    (!f.refs.is_empty()).then_some(f).into_iter().collect()
}

/// What an autoscaler scales on and where it stands: "It scales on CPU: 96 % of requests
/// against a target of 70 %."
fn scaling_metrics(hpa: &Value) -> Vec<String> {
    let current = hpa
        .pointer("/status/currentMetrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    hpa.pointer("/spec/metrics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|metric| {
            let resource = kube::str_at(metric, "/resource/name")?;
            let target = metric
                .pointer("/resource/target/averageUtilization")
                .and_then(Value::as_u64);
            let now = current
                .iter()
                .find(|c| kube::str_at(c, "/resource/name") == Some(resource))
                .and_then(|c| c.pointer("/resource/current/averageUtilization"))
                .and_then(Value::as_u64);
            let what = if resource == "cpu" {
                "CPU".to_string()
            } else {
                resource.to_string()
            };
            Some(match (now, target) {
                (Some(now), Some(target)) => format!(
                    "It scales on {what}: {now} % of requests against a target of {target} %."
                ),
                (None, Some(target)) => {
                    format!("It scales on {what}, with a target of {target} % of requests.")
                }
                _ => format!("It scales on {what}."),
            })
        })
        .collect()
}

/// A Service's Endpoints with no ready address.
fn endpoints(evidence: &Evidence, object: &Value) -> Vec<Finding> {
    let name = kube::str_at(object, "/metadata/name");
    let subsets = object
        .get("subsets")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ready = subsets
        .iter()
        .filter_map(|s| s.get("addresses").and_then(Value::as_array))
        .map(Vec::len)
        .sum::<usize>();
    if ready > 0 {
        return Vec::new();
    }
    let not_ready = subsets
        .iter()
        .filter_map(|s| s.get("notReadyAddresses").and_then(Value::as_array))
        .map(Vec::len)
        .sum::<usize>();
    let mut f = finding(
        DetectorKind::NoEndpoints,
        format!("Service `{}` has no ready endpoint", name.unwrap_or("?")),
        if not_ready > 0 {
            format!(
                "Service `{}` has {not_ready} pod(s) behind it, none ready: requests to it fail.",
                name.unwrap_or("?")
            )
        } else {
            format!(
                "Service `{}` has no pod behind it: its selector matches no running pod, so \
                 requests to it (and scrapes of it) fail.",
                name.unwrap_or("?")
            )
        },
        name,
    );
    cite_values(
        &mut f,
        evidence,
        &[
            "notReadyAddresses",
            "subsets: []",
            "subsets",
            name.unwrap_or(""),
        ],
    );
    (!f.refs.is_empty()).then_some(f).into_iter().collect()
}

/// Volume provisioning failures in events: a missing StorageClass, a provisioner error.
fn provisioning(evidence: &Evidence, ctx: &DetectionContext) -> Vec<Finding> {
    let lines: Vec<&str> = evidence.excerpt.lines().collect();
    let Some(index) = lines
        .iter()
        .position(|l| STORAGE_CLASS_MISSING.is_match(l) && !looks_like_injection(l))
        .or_else(|| {
            lines
                .iter()
                .position(|l| PROVISIONING.is_match(l) && !looks_like_injection(l))
        })
    else {
        return Vec::new();
    };
    let line = lines[index];
    let class = STORAGE_CLASS_MISSING
        .captures(line)
        .map(|c| c[1].to_string());
    let title = match &class {
        Some(class) => {
            format!("StorageClass `{class}` does not exist: the claim cannot be provisioned")
        }
        None => "Volume provisioning failing".to_string(),
    };
    let mut f = finding(
        DetectorKind::VolumeProvisioning,
        title,
        match &class {
            Some(class) => format!(
                "The claim asks for StorageClass `{class}`, which does not exist, so no volume is \
                 provisioned and the pod that mounts it stays Pending."
            ),
            None => "The volume provisioner reports a failure for the claim; the pod that mounts \
                     it stays Pending."
                .to_string(),
        },
        ctx.default_resource.as_deref(),
    );
    f.verified = class.is_some() || line.contains("ProvisioningFailed");
    f.refs.push(cite(evidence, quote_line(line)));
    vec![f]
}

/// `exceeded quota` refusals in events.
fn quota(evidence: &Evidence, ctx: &DetectionContext) -> Vec<Finding> {
    let lines: Vec<&str> = evidence.excerpt.lines().collect();
    let Some(index) = lines
        .iter()
        .position(|l| QUOTA.is_match(l) && !looks_like_injection(l))
    else {
        return Vec::new();
    };
    let line = lines[index];
    let name = QUOTA
        .captures(line)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_string());
    let mut f = finding(
        DetectorKind::QuotaExceeded,
        format!(
            "ResourceQuota `{}` exceeded: new pods are refused",
            name.as_deref().unwrap_or("?")
        ),
        format!(
            "The namespace's ResourceQuota `{}` is used up: the controller cannot create the \
             pods it needs, so replicas stay missing.",
            name.as_deref().unwrap_or("?")
        ),
        ctx.default_resource.as_deref(),
    );
    f.refs.push(cite(evidence, quote_line(line)));
    vec![f]
}
