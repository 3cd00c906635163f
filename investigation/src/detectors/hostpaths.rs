//! What writes to a node's own disk: a pod on a node whose filesystem fills (the alert names the
//! node, or the kubelet reports its disk pressure) that mounts a host directory writable
//! (`hostPath`) and is set to log verbosely (`LOG_LEVEL=debug`). The kubelet counts a pod's
//! container logs and `emptyDir` volumes against its `ephemeral-storage`, never what it writes to
//! a `hostPath`: such a pod fills the node while ranking last for eviction.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`HostPathWriter`] | cause | the node's disk is full (the alert's node filesystem, or the kubelet's disk pressure) and the pod's own spec, on that node, mounts the hostPath writable and sets a verbose log level |
//!
//! Both halves are structural (the alert or the kubelet, and the pod's spec), never an
//! application's words. A pod that mounts a host directory read-only (a log collector, an
//! exporter), a socket or a device, or that logs at its usual level, is no finding.
//!
//! What explains what: the writer explains its node's disk pressure and the evictions it caused.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite,
};
use crate::kube::{str_at, writable_mounts};

/// Whether the alert is about a disk filling: a storage alert, or a node alert whose words
/// name its filesystem or disk (`NodeFilesystemAlmostOutOfSpace`).
pub fn disk_alert(target: &firstline_alert::AlertTarget) -> bool {
    match super::alert_symptom(target) {
        Symptom::Storage => true,
        Symptom::Node => {
            let words = super::alert_words(target);
            ["filesystem", "disk", "inode", "out of space", "space left"]
                .iter()
                .any(|w| words.contains(w))
        }
        _ => false,
    }
}

/// Log levels that write every event.
const VERBOSE: &[&str] = &[
    "debug", "trace", "verbose", "all", "finest", "debug2", "debug3",
];

/// A host directory a pod's container mounts writable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostWrite {
    pub container: String,
    pub host_path: String,
    pub mount_path: String,
}

/// The host directories `pod` (a Pod object) mounts writable: not read-only, not a socket, a
/// device or one of the kernel's own filesystems.
pub fn host_writes(pod: &Value) -> Vec<HostWrite> {
    let volumes: Vec<(&str, &str)> = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let kind = str_at(v, "/hostPath/type").unwrap_or("");
            if matches!(kind, "Socket" | "CharDevice" | "BlockDevice") {
                return None;
            }
            let path = str_at(v, "/hostPath/path")?;
            let system = ["/proc", "/sys", "/dev", "/run", "/var/run", "/etc"]
                .iter()
                .any(|p| path == *p || path.starts_with(&format!("{p}/")));
            (!system && path != "/").then_some((str_at(v, "/name")?, path))
        })
        .collect();
    writable_mounts(pod)
        .into_iter()
        .filter_map(|m| {
            let (_, host) = volumes.iter().find(|(v, _)| *v == m.volume)?;
            Some(HostWrite {
                container: m.container.to_string(),
                host_path: (*host).to_string(),
                mount_path: m.mount_path.to_string(),
            })
        })
        .collect()
}

/// A container's verbose log level, from its env: (variable, value).
fn verbose_level(container: &Value) -> Option<(String, String)> {
    container
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|e| {
            let name = str_at(e, "/name")?;
            let value = str_at(e, "/value")?;
            let upper = name.to_ascii_uppercase();
            let about_level = (upper.contains("LOG") && upper.contains("LEVEL"))
                || upper == "LOGLEVEL"
                || upper == "VERBOSITY";
            (about_level && VERBOSE.contains(&value.trim().to_ascii_lowercase().as_str()))
                .then(|| (name.to_string(), value.to_string()))
        })
}

/// A pod on a node whose disk fills, writing verbosely to a host directory of that node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostPathWriter {
    pub node: String,
    pub namespace: Option<String>,
    pub pod: String,
    pub container: String,
    /// The node's directory it writes to.
    pub host_path: String,
    /// Where the container sees it.
    pub mount_path: String,
    /// The env variable setting its log level, and the value (`LOG_LEVEL`, `debug`).
    pub level_var: String,
    pub level: String,
    /// An env value naming a file under the mount (`LOG_FILE=/var/log/app/x.log`).
    #[serde(default)]
    pub file: Option<String>,
}

impl Payload for HostPathWriter {
    const SPEC: KindSpec = KindSpec {
        name: "hostpath-writer",
        role: Role::Cause,
        verified_when: "the node's disk is full (the alert's node filesystem or the kubelet's \
                        disk pressure) and the pod's spec on that node mounts the hostPath \
                        writable and sets a verbose log level",
        accounts_for: &[Symptom::Storage, Symptom::Node],
    };

    fn example() -> Self {
        Self {
            node: "worker-3".into(),
            namespace: Some("orders".into()),
            pod: "order-ingest-6d8f9b7c5-h4xzt".into(),
            container: "ingest".into(),
            host_path: "/var/log/order-ingest".into(),
            mount_path: "/var/log/app".into(),
            level_var: "LOG_LEVEL".into(),
            level: "debug".into(),
            file: Some("/var/log/app/order-ingest.log".into()),
        }
    }

    fn title(&self) -> String {
        format!(
            "Pod `{}` logs at `{}={}` to hostPath `{}` on node `{}`, whose disk is full",
            self.pod, self.level_var, self.level, self.host_path, self.node
        )
    }

    fn detail(&self) -> String {
        let file = self
            .file
            .as_deref()
            .map(|f| format!(" (`{f}`)"))
            .unwrap_or_default();
        format!(
            "Container `{}` of pod `{}` runs with `{}={}` and writes under `{}`{file}, the \
             node's own directory `{}` (a hostPath). The kubelet does not count a hostPath \
             against the pod's ephemeral-storage, so it fills node `{}`'s disk while the pod \
             ranks last for eviction.",
            self.container,
            self.pod,
            self.level_var,
            self.level,
            self.mount_path,
            self.host_path,
            self.node
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Pod, self.pod.clone()))
    }

    fn step(&self, _scene: &Scene) -> String {
        let ns = super::text::namespace_flag(self.namespace.as_deref());
        format!(
            "Set {} back to its usual level on the workload that owns pod `{}` (`kubectl set \
             env{ns}` on it, `{}=info`), then free node `{}`'s disk: truncate or rotate what it wrote \
             under hostPath `{}` (`du -sh {}` on the node); log to stdout or an `emptyDir` with \
             an `ephemeral-storage` limit so the kubelet counts it.",
            self.level_var, self.pod, self.level_var, self.node, self.host_path, self.host_path
        )
    }

    /// The node's disk pressure, and the pods evicted from it for ephemeral storage.
    fn explains(&self, effect: &Finding) -> bool {
        match &effect.fact {
            Fact::NodePressure(p) => p.node == self.node,
            Fact::DiskFull(d) => {
                d.node.as_deref() == Some(self.node.as_str())
                    || (d.pod.as_deref() == Some(self.node.as_str()) && d.node.is_none())
            }
            _ => false,
        }
    }
}

/// The nodes whose disk is full: the alert's node under a storage alert, and the nodes the
/// kubelet reports disk pressure on.
fn full_nodes(round: &Round<'_>) -> Vec<String> {
    let mut nodes: Vec<String> = Vec::new();
    if let Some(node) = &round.ctx.alert_node
        && matches!(round.ctx.symptom, Symptom::Storage)
    {
        nodes.push(node.clone());
    }
    for finding in round.found.iter().filter(|f| f.verified) {
        let node = match &finding.fact {
            Fact::NodePressure(p) if p.pressure == super::nodes::Pressure::DiskPressure => {
                Some(p.node.clone())
            }
            Fact::DiskFull(d) if d.source == super::disk::DiskSource::Kubelet => d.node.clone(),
            _ => None,
        };
        if let Some(node) = node
            && !nodes.contains(&node)
        {
            nodes.push(node);
        }
    }
    nodes
}

/// The verbatim line of `excerpt` holding `needle`, trimmed, for a citation.
fn line_with<'a>(excerpt: &'a str, needle: &str) -> Option<&'a str> {
    excerpt
        .lines()
        .find(|l| l.contains(needle))
        .map(str::trim)
        .filter(|l| !l.is_empty())
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let nodes = full_nodes(round);
    if nodes.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (evidence, pod) in round.pods() {
        let Some(node) = str_at(pod, "/spec/nodeName").filter(|n| nodes.iter().any(|x| x == n))
        else {
            continue;
        };
        let Some(name) = str_at(pod, "/metadata/name") else {
            continue;
        };
        // A pod that is gone writes nothing more.
        if matches!(str_at(pod, "/status/phase"), Some("Failed" | "Succeeded")) {
            continue;
        }
        for write in host_writes(pod) {
            let Some(container) = pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .and_then(|cs| {
                    cs.iter()
                        .find(|c| str_at(c, "/name") == Some(&write.container))
                })
            else {
                continue;
            };
            let Some((level_var, level)) = verbose_level(container) else {
                continue;
            };
            let file = container
                .get("env")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|e| str_at(e, "/value"))
                .find(|v| v.starts_with(&format!("{}/", write.mount_path.trim_end_matches('/'))))
                .map(str::to_string);
            let mut refs = Vec::new();
            for needle in [
                format!("path: {}", write.host_path),
                format!("value: {level}"),
            ] {
                if let Some(line) = line_with(&evidence.excerpt, &needle) {
                    refs.push(cite(evidence, line.to_string()));
                }
            }
            if refs.is_empty() {
                // The excerpt does not show the spec: nothing to cite.
                continue;
            }
            out.push(
                Finding::new(
                    HostPathWriter {
                        node: node.to_string(),
                        namespace: str_at(pod, "/metadata/namespace").map(str::to_string),
                        pod: name.to_string(),
                        container: write.container.clone(),
                        host_path: write.host_path.clone(),
                        mount_path: write.mount_path.clone(),
                        level_var,
                        level,
                        file,
                    },
                    Confidence::High,
                    true,
                )
                .citing(refs),
            );
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests;
