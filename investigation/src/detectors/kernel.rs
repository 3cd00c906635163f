//! A node's kernel reporting a fault, from the node's own journal (a log query for the node's
//! streams, read when a lead points at the node): a GPU the driver lost (NVIDIA Xid), the
//! connection-tracking table full, disk I/O errors, the whole node out of memory, a CPU stuck,
//! a machine check. Each is a fault of the place, not of the pods that run there.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`KernelFault`] | cause | the node's journal in the round holds the line |
//!
//! What explains what: a fault on the node that failing pods share explains their sharing it
//! (and `siblings` locates a failure on such a node from two failing pods, not three); a full
//! conntrack table explains the timeouts of calls from pods on that node. A
//! container's own memory-cgroup OOM kill is not a node fault (`containers` reads it).

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::text::{log_lines, quote_line};
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite,
};
use crate::evidence::{Capability, Evidence};

/// Which fault the kernel reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// The NVIDIA driver reports an Xid error (79: the GPU fell off the bus; 48, 94, 95: ECC).
    GpuXid,
    /// `nf_conntrack: table full, dropping packet`.
    ConntrackFull,
    /// A block device or filesystem fails I/O.
    DiskIo,
    /// The node itself ran out of memory (not one container's cgroup).
    NodeOutOfMemory,
    /// A CPU stuck or a task hung in the kernel.
    Lockup,
    /// The hardware reports an error (machine check).
    Hardware,
}

impl Fault {
    fn words(self) -> &'static str {
        match self {
            Fault::GpuXid => "a GPU fault (NVIDIA Xid)",
            Fault::ConntrackFull => "its connection-tracking table full, dropping packets",
            Fault::DiskIo => "disk I/O errors",
            Fault::NodeOutOfMemory => "the node out of memory",
            Fault::Lockup => "a CPU or task stuck in the kernel",
            Fault::Hardware => "a hardware error",
        }
    }

    fn step(self, node: &str) -> String {
        match self {
            Fault::GpuXid => format!(
                "Cordon and drain node `{node}` (`kubectl cordon {node}`; `kubectl drain {node} \
                 --ignore-daemonsets`) so no pod is placed on its faulty GPU, then reset or \
                 replace the GPU or the instance and rerun what failed there."
            ),
            Fault::ConntrackFull => format!(
                "Raise `net.netfilter.nf_conntrack_max` on node `{node}` (or move the \
                 connection-heavy pods off it) and find what opens so many connections: \
                 `conntrack -C` on the node."
            ),
            Fault::DiskIo => format!(
                "Cordon node `{node}` and check its disk (`dmesg`, the cloud provider's volume \
                 status); move the pods that use it elsewhere."
            ),
            Fault::NodeOutOfMemory => format!(
                "Find what used node `{node}`'s memory (pods without limits, the kubelet's \
                 reservations) and cordon it if it happens again."
            ),
            Fault::Lockup | Fault::Hardware => format!(
                "Cordon and drain node `{node}` and replace the instance: its kernel reports \
                 a fault no pod can fix."
            ),
        }
    }
}

/// A fault a node's kernel reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelFault {
    pub node: String,
    pub fault: Fault,
    /// The line, verbatim (or its deciding part).
    pub line: String,
    /// How many lines of the journal report it.
    pub lines: usize,
}

static FAULTS: LazyLock<Vec<(Fault, Regex)>> = LazyLock::new(|| {
    let re = |p: &str| Regex::new(p).unwrap_or_else(|e| panic!("fault pattern {p}: {e}"));
    vec![
        (
            Fault::GpuXid,
            re(r"NVRM: Xid \([^)]*\): \d+|GPU has fallen off the bus"),
        ),
        (
            Fault::ConntrackFull,
            re(r"nf_conntrack: (nf_conntrack: )?table full, dropping packet"),
        ),
        (
            Fault::DiskIo,
            re(
                r"EXT4-fs error|XFS \(\S+\): (metadata I/O error|Corruption)|Buffer I/O error|blk_update_request: I/O error|I/O error, dev \S+|nvme\S*: .*timeout",
            ),
        ),
        (
            Fault::NodeOutOfMemory,
            re(r"^(\[[^\]]*\] )?Out of memory: Kill(ed)? process"),
        ),
        (
            Fault::Lockup,
            re(r"watchdog: BUG: soft lockup|blocked for more than \d+ seconds"),
        ),
        (
            Fault::Hardware,
            re(r"\[Hardware Error\]|Machine check events logged|mce: .*Hardware Error"),
        ),
    ]
});

static NODE_SELECTOR: LazyLock<Regex> = regex!(r#"\bnode\s*=\s*"([^"]+)""#);

impl Payload for KernelFault {
    const SPEC: KindSpec = KindSpec {
        name: "kernel-fault",
        role: Role::Cause,
        verified_when: "the node's journal in the round holds the kernel's line",
        accounts_for: &[Symptom::Node],
    };

    fn example() -> Self {
        Self {
            node: "gpu-3".into(),
            fault: Fault::GpuXid,
            line: "NVRM: Xid (PCI:0000:00:1e): 79, pid=1882342, name=python, GPU has fallen off \
                   the bus."
                .into(),
            lines: 2,
        }
    }

    fn title(&self) -> String {
        format!(
            "Node `{}`'s kernel reports {}: `{}`",
            self.node,
            self.fault.words(),
            self.line
        )
    }

    fn detail(&self) -> String {
        let times = if self.lines == 1 {
            "once".to_string()
        } else {
            format!("{} times", self.lines)
        };
        format!(
            "The journal of node `{}` reports {} ({times} in the window read): a fault of the \
             node, which every pod placed there inherits.",
            self.node,
            self.fault.words()
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Node, self.node.clone()))
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.node == other.node && self.fault == other.fault
    }

    fn step(&self, _scene: &Scene) -> String {
        self.fault.step(&self.node)
    }

    /// The failing pods' sharing this node, and the calls that time out from a pod on it when
    /// the node drops packets.
    fn explains(&self, effect: &Finding) -> bool {
        match &effect.fact {
            Fact::SharedByFailing(s) => s.on_node(&self.node),
            Fact::Dependency(d) => {
                self.fault == Fault::ConntrackFull
                    && d.node.as_deref() == Some(self.node.as_str())
                    && d.timed_out()
            }
            _ => false,
        }
    }
}

/// The node whose journal `evidence` holds: the node its log query selects.
fn journal_node(evidence: &Evidence) -> Option<String> {
    if evidence.capability != Capability::LogQuery {
        return None;
    }
    let query = evidence.string_arg(&["logql", "query", "expr"])?;
    NODE_SELECTOR
        .captures(query)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_string())
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for evidence in round.evidence {
        let Some(node) = journal_node(evidence) else {
            continue;
        };
        let lines = log_lines(evidence);
        for (fault, pattern) in FAULTS.iter() {
            let matching: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| pattern.is_match(l))
                .collect();
            // The log store answers newest first: the first match is the latest report, the
            // last the earliest; the earliest says what happened first (Xid 79, then the
            // adapter's failed re-initialisations).
            // An Xid line names the error's code: it says more than the lines around it.
            let Some(line) = matching
                .iter()
                .rev()
                .find(|l| l.contains("Xid"))
                .or(matching.last())
            else {
                continue;
            };
            let quote = quote_line(line);
            out.push(
                Finding::new(
                    KernelFault {
                        node: node.clone(),
                        fault: *fault,
                        line: quote.clone(),
                        lines: matching.len(),
                    },
                    Confidence::High,
                    true,
                )
                .citing(vec![cite(evidence, quote)]),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests;
