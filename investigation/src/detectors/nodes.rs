//! Nodes in trouble, from their own objects: not Ready (or Ready unknown: the kubelet stopped
//! posting status), or under memory, disk or PID pressure; corroborated by the events that
//! name them.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`NodeNotReady`] | cause | the node's Ready condition is False or Unknown |
//! | [`NodePressure`] | cause | the node reports a pressure condition True |
//!
//! What explains what: a lost node explains the pods Pending on its `unreachable` /
//! `not-ready` taints and the containers the kubelet lost; a node under pressure explains the
//! evictions it makes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::disruptions::Disruption;
use super::text::{cite_values, event_naming};
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite,
};
use crate::kube::{self, Condition};

/// A node that is not Ready.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeNotReady {
    pub node: String,
    /// `False` or `Unknown` (the kubelet stopped posting status).
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// What the events naming it report, told once (a Go error chain's gist).
    pub reported: Option<String>,
}

impl Payload for NodeNotReady {
    const SPEC: KindSpec = KindSpec {
        name: "node-not-ready",
        role: Role::Cause,
        verified_when: "the node's Ready condition is False or Unknown",
        accounts_for: &[Symptom::Node, Symptom::Unavailable],
    };

    fn example() -> Self {
        Self {
            node: "worker-eu-1b-5".into(),
            status: "Unknown".into(),
            reason: Some("NodeStatusUnknown".into()),
            message: Some("Kubelet stopped posting node status.".into()),
            reported: None,
        }
    }

    fn title(&self) -> String {
        let how = if self.status == "Unknown" {
            match self.message.as_deref() {
                Some(m) if m.to_ascii_lowercase().contains("stopped posting") => {
                    "status unknown: the kubelet stopped posting status"
                }
                _ => "status unknown",
            }
        } else {
            "Ready=False"
        };
        format!("Node `{}` is NotReady ({how})", self.node)
    }

    fn detail(&self) -> String {
        let why = explain(self.reason.as_deref(), self.message.as_deref());
        let mut detail = format!(
            "Node `{}` reports Ready={}{}; its pods are not running there until it recovers, \
             and after the eviction timeout they are evicted.",
            self.node,
            self.status,
            why.map(|w| format!(": {w}")).unwrap_or_default()
        );
        if let Some(reported) = &self.reported {
            detail.push_str(&format!(" Kubernetes reports: {reported}"));
        }
        detail
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Node, self.node.clone()))
    }

    fn step(&self, _scene: &Scene) -> String {
        let node = &self.node;
        format!(
            "Check node `{node}`: `kubectl describe node {node}`, its kubelet (`journalctl -u \
             kubelet`) and the machine behind it; if it does not come back, cordon and drain it \
             so its pods run elsewhere."
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        match &effect.fact {
            Fact::Unschedulable(u) => u.waits_for_lost_node(),
            Fact::Exited(e) => e.lost() && e.node.as_deref() == Some(self.node.as_str()),
            Fact::Disrupted(d) => {
                d.how == Disruption::TaintManager && d.node.as_deref() == Some(self.node.as_str())
            }
            Fact::WarningEvent(w) => w.object.as_deref() == Some(self.node.as_str()),
            Fact::SharedByFailing(s) => s.on_node(&self.node),
            _ => false,
        }
    }
}

/// Which pressure a node reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pressure {
    MemoryPressure,
    DiskPressure,
    #[serde(rename = "PIDPressure")]
    PidPressure,
}

impl Pressure {
    fn name(self) -> &'static str {
        match self {
            Pressure::MemoryPressure => "MemoryPressure",
            Pressure::DiskPressure => "DiskPressure",
            Pressure::PidPressure => "PIDPressure",
        }
    }
}

/// A node under memory, disk or PID pressure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodePressure {
    pub node: String,
    pub pressure: Pressure,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// The alert is this node's disk filling: the condition restates it, it does not say why.
    #[serde(default)]
    pub restates_alert: bool,
}

impl Payload for NodePressure {
    const SPEC: KindSpec = KindSpec {
        name: "node-pressure",
        role: Role::Cause,
        verified_when: "the node reports MemoryPressure, DiskPressure or PIDPressure True",
        accounts_for: &[
            Symptom::Node,
            Symptom::Unavailable,
            Symptom::Restarts,
            Symptom::Storage,
        ],
    };

    fn example() -> Self {
        Self {
            node: "worker-1".into(),
            pressure: Pressure::MemoryPressure,
            reason: Some("KubeletHasInsufficientMemory".into()),
            message: Some("kubelet has insufficient memory available".into()),
            restates_alert: false,
        }
    }

    fn title(&self) -> String {
        format!("Node `{}` has {}", self.node, self.pressure.name())
    }

    fn detail(&self) -> String {
        format!(
            "Node `{}` reports {}{}; the kubelet evicts pods to relieve it and the scheduler \
             avoids the node.",
            self.node,
            self.pressure.name(),
            explain(self.reason.as_deref(), self.message.as_deref())
                .map(|w| format!(": {w}"))
                .unwrap_or_default()
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Node, self.node.clone()))
    }

    fn role(&self) -> Role {
        if self.restates_alert {
            Role::Symptom
        } else {
            Role::Cause
        }
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.node == other.node && self.pressure == other.pressure
    }

    fn step(&self, _scene: &Scene) -> String {
        let node = &self.node;
        match self.pressure {
            Pressure::DiskPressure => format!(
                "Free disk on node `{node}`: find what fills it (container logs, images, \
                 emptyDir volumes: `du` under /var/lib/kubelet and /var/log on the node) and \
                 fix or move it."
            ),
            _ => format!(
                "Relieve node `{node}`: find the pods using most of the resource under pressure \
                 (`kubectl top pods -A --sort-by=memory`, or disk use on the node) and fix or \
                 move them."
            ),
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        match &effect.fact {
            Fact::DiskFull(d) => {
                self.pressure == Pressure::DiskPressure
                    && d.source == super::disk::DiskSource::Kubelet
                    && d.node.as_deref() == Some(self.node.as_str())
            }
            Fact::Exited(e) => e.lost() && e.node.as_deref() == Some(self.node.as_str()),
            Fact::Disrupted(d) => {
                d.how == Disruption::NodePressure && d.node.as_deref() == Some(self.node.as_str())
            }
            Fact::SharedByFailing(s) => s.on_node(&self.node),
            _ => false,
        }
    }
}

fn explain(reason: Option<&str>, message: Option<&str>) -> Option<String> {
    match (reason, message) {
        (Some(r), Some(m)) => Some(format!("{r} ({m})")),
        (Some(r), None) => Some(r.to_string()),
        (None, Some(m)) => Some(m.to_string()),
        (None, None) => None,
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    round
        .objects("Node")
        .into_iter()
        .flat_map(|(evidence, object)| node(round, evidence, object))
        .collect()
}

fn node(round: &Round<'_>, evidence: &crate::evidence::Evidence, object: &Value) -> Vec<Finding> {
    let Some(name) = kube::str_at(object, "/metadata/name") else {
        return Vec::new();
    };
    let conditions = kube::conditions_of(object);
    let mut out = Vec::new();
    if let Some(ready) = conditions
        .iter()
        .find(|c| c.kind == "Ready" && c.status != "True")
    {
        let reported = event_naming(round.evidence, &[name]);
        let mut f = Finding::new(
            NodeNotReady {
                node: name.to_string(),
                status: ready.status.clone(),
                reason: ready.reason.clone(),
                message: ready.message.clone(),
                reported: reported.as_ref().map(|(_, _, gist)| gist.clone()),
            },
            Confidence::High,
            true,
        )
        .dated(since(ready));
        let needles: Vec<&str> = [ready.message.as_deref(), ready.reason.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        cite_values(&mut f, evidence, &needles);
        if let Some((event, line, _)) = reported {
            let citation = cite(event, super::text::quote_line(line));
            if !f.refs.contains(&citation) {
                f.refs.insert(1.min(f.refs.len()), citation);
            }
        }
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
    for condition in conditions.iter().filter(|c| c.status == "True") {
        let pressure = match condition.kind.as_str() {
            "MemoryPressure" => Pressure::MemoryPressure,
            "DiskPressure" => Pressure::DiskPressure,
            "PIDPressure" => Pressure::PidPressure,
            _ => continue,
        };
        let ctx = round.ctx;
        let restates_alert = pressure == Pressure::DiskPressure
            && matches!(ctx.symptom, Symptom::Node | Symptom::Storage)
            && ctx.alert_node.as_deref() == Some(name);
        let mut f = Finding::new(
            NodePressure {
                node: name.to_string(),
                pressure,
                reason: condition.reason.clone(),
                message: condition.message.clone(),
                restates_alert,
            },
            Confidence::High,
            true,
        )
        .dated(since(condition));
        let needles: Vec<&str> = [condition.message.as_deref(), condition.reason.as_deref()]
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

/// When a condition last changed.
fn since(condition: &Condition) -> Option<chrono::DateTime<chrono::Utc>> {
    condition
        .since
        .as_deref()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&chrono::Utc))
}

#[cfg(test)]
mod tests;
