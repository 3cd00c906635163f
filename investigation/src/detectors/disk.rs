//! Disks that are full: a pod evicted for ephemeral storage, a node's disk-pressure condition
//! or taint quoted in a pod's status or events, or an application's "no space left on device".
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`DiskFull`] | cause | the kubelet reports it; from a log, as any log line (`logscan.rs`) |
//!
//! What explains what: a full disk explains its pod's exits, crash loop and crash line. A
//! node's own DiskPressure condition is a node finding (`nodes.rs`).

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::containers::pod_failure_explains;
use super::finding::in_pod;
use super::logscan::LogScan;
use super::text::{field_value, looks_like_injection, object_name, quote_deciding, quote_from};
use super::{
    Confidence, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom, cite,
};

static DISK_PRESSURE: LazyLock<Regex> = regex!(
    r"(?i)\bNodeHasDiskPressure\b|\bDiskPressure\b\s+True\b|condition:?\s*\[?DiskPressure|low on resource: ephemeral-storage|ephemeral local storage usage exceeds|no space left on device|node\.kubernetes\.io/disk-pressure|\bEvicted\b.*ephemeral-storage"
);
pub(super) static NO_SPACE: LazyLock<Regex> =
    regex!(r"(?i)no space left on device|\bENOSPC\b|disk (?:is )?full");

/// Who says the disk is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiskSource {
    /// The kubelet: an eviction, a disk-pressure condition or taint.
    Kubelet,
    /// The application's log (`no space left on device`).
    Application,
}

/// A full disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskFull {
    pub pod: Option<String>,
    pub source: DiskSource,
    /// The alert is a node's disk filling, and the kubelet's account restates it (the node ran
    /// out of space, a pod was evicted for it): what filled it is the question.
    #[serde(default)]
    pub restates_alert: bool,
    /// The node whose disk it is, where the kubelet's account says.
    #[serde(default)]
    pub node: Option<String>,
}

impl Payload for DiskFull {
    const SPEC: KindSpec = KindSpec {
        name: "disk-pressure",
        role: Role::Cause,
        verified_when: "the kubelet reports an eviction or disk pressure; from a log, a \
                        container crashed and the error ends its log",
        accounts_for: &[
            Symptom::Storage,
            Symptom::Node,
            Symptom::Restarts,
            Symptom::Unavailable,
            Symptom::Errors,
            Symptom::JobFailed,
        ],
    };

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            source: DiskSource::Application,
            restates_alert: false,
            node: None,
        }
    }

    fn title(&self) -> String {
        match self.source {
            DiskSource::Kubelet => "Disk pressure / out of disk space".to_string(),
            DiskSource::Application => "Out of disk space (no space left on device)".to_string(),
        }
    }

    fn detail(&self) -> String {
        match self.source {
            DiskSource::Kubelet => format!(
                "The node or container{} is out of disk space (disk pressure, eviction or \
                 ENOSPC).",
                in_pod(self.pod.as_deref())
            ),
            DiskSource::Application => format!(
                "The application{} ran out of disk space.",
                in_pod(self.pod.as_deref())
            ),
        }
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn role(&self) -> Role {
        Role::cause_unless_it_follows(self.restates_alert)
    }

    fn step(&self, scene: &Scene) -> String {
        match self.source {
            DiskSource::Kubelet => format!(
                "Find what fills the node's disk (`kubectl describe node` names the pressure; \
                 container logs, images and `emptyDir` volumes live there), then set an \
                 `ephemeral-storage` limit on {}'s containers so one pod cannot fill it again.",
                scene.owner()
            ),
            DiskSource::Application => format!(
                "Free space on the volume the application writes to (log rotation, old data) or \
                 expand its PersistentVolumeClaim, then restart the pod (`{}` names the path).",
                scene.previous_log_command(self.pod.as_deref(), None)
            ),
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        pod_failure_explains(self.pod.as_deref(), effect)
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (evidence, ctx) in round.structural() {
        let lines: Vec<&str> = evidence.excerpt.lines().collect();
        // A pod carries no taints: a `key:` naming the disk-pressure taint in a pod is one of
        // its tolerations (every DaemonSet pod gets it by default).
        let is_node = lines.iter().any(|l| l.trim() == "kind: Node");
        let Some(index) = lines.iter().position(|l| {
            let lower = l.to_ascii_lowercase();
            let taint_key = lower.trim_start_matches(['-', ' ']).starts_with("key:");
            DISK_PRESSURE.is_match(l)
                && !looks_like_injection(l)
                && (is_node || !taint_key)
                // Tolerations of the disk-pressure taint are normal for DaemonSets.
                && !lower.contains("toleration")
                && !lower.contains("op=exists")
                && !lower.contains("no disk pressure")
                && !lower.contains("nodiskpressure")
        }) else {
            continue;
        };
        let line = lines[index];
        let start = DISK_PRESSURE.find(line).map_or(0, |m| m.start());
        // A node's own description (it has taints) is about the node; a pod's names its node.
        let about_node = lines.iter().any(|l| l.trim_start().starts_with("Taints:"));
        let name = object_name(evidence).or_else(|| ctx.default_resource.clone());
        let (pod, node) = if about_node {
            (None, name)
        } else {
            let node = lines
                .iter()
                .find_map(|l| field_value(l, "node"))
                .and_then(|v| v.split('/').next())
                .filter(|n| !n.is_empty() && *n != "<none>")
                .map(str::to_string);
            (name, node)
        };
        out.push(
            Finding::new(
                DiskFull {
                    pod,
                    source: DiskSource::Kubelet,
                    restates_alert: ctx.alert_node.is_some()
                        && matches!(ctx.symptom, Symptom::Node | Symptom::Storage),
                    node,
                },
                Confidence::High,
                true,
            )
            .citing(vec![cite(evidence, quote_from(line, start))]),
        );
    }
    for scan in LogScan::all(round, false) {
        let Some((index, line)) = scan.last(&NO_SPACE) else {
            continue;
        };
        let quote = quote_deciding(line, &NO_SPACE);
        let (verified, confidence) = scan.strength(index);
        out.push(
            Finding::new(
                DiskFull {
                    pod: scan.pod.clone(),
                    source: DiskSource::Application,
                    restates_alert: false,
                    node: None,
                },
                confidence,
                verified,
            )
            .citing(vec![cite(scan.evidence, quote)]),
        );
    }
    out
}

#[cfg(test)]
mod tests;
