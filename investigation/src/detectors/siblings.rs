//! "What do the failing pods share that the healthy ones do not?" — when two or more pods of one
//! workload fail (crash loop, OOM kill, not ready, Pending on a node, Failed or Evicted) and
//! every one of them runs on the same node, in the same zone or node generation (instance type,
//! node group or pool, architecture, OS image, kubelet), or the same revision
//! (`pod-template-hash`, `controller-revision-hash`), while none of the workload's healthy pods
//! does, that shared property is where to look: the pods run the same code and differ only there.
//!
//! Pods are read from the round's descriptions and object views and from its pod lists (each
//! item alone, so a list the excerpt elided still yields its intact pods); nodes from the Node
//! objects the round holds. A pod that restarted but is ready now is neither failing nor a
//! healthy baseline. With no healthy sibling, only a node is named, and only when the
//! workload's other pods run elsewhere.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`SharedByFailing`] | cause when *located*, else context (a lead) | located: at least [`LOCATED_FAILING`] failing pods share a node or node generation, at least [`LOCATED_HEALTHY`] healthy siblings of the same revision run elsewhere (two and one when the node's kernel reports a fault) |
//!
//! A located failure is the node's, not the code's: the pods run one template and fail only
//! where they share a place, so the crash line, OOM kill or failed Job each failing pod shows
//! is what the place did to it (it explains them). Fewer pods may be chance: then it is a lead
//! only, and a shared revision is always only a lead (the revision diff says what changed).
//! A node it names is a lead to read next ([`Lead::Node`]); a located failure also leads to the
//! current logs of two failing pods and a healthy sibling ([`Lead::CompareLogs`]), and the
//! settings the failing processes log alike and the healthy one logs otherwise
//! (`maxHeap=44032 MiB` against `1434 MiB`) are named with it: what the place changes in them.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::{DateTime, Duration, Utc};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lead::Lead;
use super::text::quote_line;
use super::{
    Citation, Confidence, Fact, Finding, Kind, KindSpec, ObjectKind, Payload, Role, Round, Scene,
    Subject, cite,
};
use crate::evidence::{Capability, Evidence};
use crate::kube::{self, PodInfo};

/// What the failing pods share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sharing {
    Node,
    /// A label or `nodeInfo` field of their nodes (zone, instance type, node group, OS image).
    NodeLabel,
    /// Their pods' revision label.
    Revision,
}

/// One property every failing pod has and no baseline pod has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shared {
    pub sharing: Sharing,
    /// `node`, the label (`topology.kubernetes.io/zone`, `pod-template-hash`) or the `nodeInfo`
    /// field (`osImage`).
    pub key: String,
    pub value: String,
    /// What the baseline pods have instead, each once.
    pub baseline: Vec<String>,
}

/// Failing pods of one workload that share what its healthy pods do not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedByFailing {
    /// `Deployment`, `StatefulSet`, `DaemonSet`.
    pub workload_kind: String,
    pub workload: String,
    /// What they share, the most telling first.
    pub shared: Vec<Shared>,
    /// The failing pods, each with why it counts as failing.
    pub failing: Vec<(String, String)>,
    /// The pods compared against: the healthy siblings, or (with none) the workload's others.
    pub baseline: Vec<String>,
    pub healthy_baseline: bool,
    /// Enough failing pods share a place, against enough healthy pods of the same revision
    /// elsewhere, that the place is where the failure is (see the module's table).
    #[serde(default)]
    pub located: bool,
    /// Settings the failing pods' logs state alike and the healthy pods' logs state otherwise
    /// (`maxHeap=44032 MiB` against `maxHeap=1434 MiB`): what the place changes in the process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs_differ: Vec<LogDifference>,
}

/// A setting the failing pods' logs state one way and the healthy pods' another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogDifference {
    pub key: String,
    pub failing: String,
    pub healthy: String,
}

/// A `key=value` setting in a log line (`maxHeap=44032 MiB`, `availableProcessors=16`,
/// `GOMAXPROCS=16`), a size unit kept with its number.
static SETTING: LazyLock<Regex> =
    regex!(r#"\b([A-Za-z][A-Za-z0-9_.-]{1,40})=("[^"]*"|[^\s,;\]\)}]+(?: ?(?:[KMGT]i?B)\b)?)"#);
/// Failing pods whose logs must agree on a setting before it counts: one log may state a
/// request's value rather than a setting.
const AGREEING_LOGS: usize = 2;
/// Differences a finding names.
const MAX_DIFFERENCES: usize = 3;
/// Failing pods whose logs a comparison reads.
const COMPARED_FAILING: usize = 2;

/// Node labels and `nodeInfo` fields that tell one generation of nodes from another.
const NODE_KEYS: &[&str] = &[
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/zone",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "kubernetes.io/arch",
    "osImage",
    "kernelVersion",
    "kubeletVersion",
];
const NODE_INFO: &[&str] = &["osImage", "kernelVersion", "kubeletVersion"];
const REVISION_LABELS: &[&str] = &["pod-template-hash", "controller-revision-hash"];
/// Failing pods that, sharing a place, locate the failure there: two may share a node by chance.
pub const LOCATED_FAILING: usize = 3;
/// Healthy siblings elsewhere needed to locate it.
pub const LOCATED_HEALTHY: usize = 2;
/// Pods a detail names before "and N more".
const NAMED_PODS: usize = 5;
const MAX_REFS: usize = 6;

/// `` `a`, `b`, and 3 more ``.
fn names<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    listed(names.into_iter().map(|n| format!("`{n}`")).collect())
}

/// The first few of `items`, and how many more.
fn listed(items: Vec<String>) -> String {
    let more = items.len().saturating_sub(NAMED_PODS);
    let mut shown: Vec<String> = items.into_iter().take(NAMED_PODS).collect();
    if more > 0 {
        shown.push(format!("and {more} more"));
    }
    shown.join(", ")
}

impl Shared {
    /// `on node `worker-3``, `on nodes with `kubernetes.io/arch=arm64``, `revision `6f9b8c7d54``.
    fn phrase(&self) -> String {
        match self.sharing {
            Sharing::Node => format!("on node `{}`", self.value),
            Sharing::NodeLabel => format!("on nodes with `{}={}`", self.key, self.value),
            Sharing::Revision => format!("revision `{}` ({})", self.value, self.key),
        }
    }
}

impl SharedByFailing {
    /// Whether the failing pods share node `node`.
    pub fn on_node(&self, node: &str) -> bool {
        self.shared
            .iter()
            .any(|s| s.sharing == Sharing::Node && s.value == node)
    }

    fn first(&self) -> Option<&Shared> {
        self.shared.first()
    }

    fn kind_ref(&self) -> String {
        format!(
            "{}/{}",
            self.workload_kind.to_ascii_lowercase(),
            self.workload
        )
    }
}

impl Payload for SharedByFailing {
    const SPEC: KindSpec = KindSpec {
        name: "shared-by-failing",
        role: Role::Context,
        verified_when: "located: three or more failing pods share a node or node generation \
                        while two or more healthy pods of the same revision run elsewhere; \
                        otherwise never a cause, only where to look",
        accounts_for: &[],
    };

    fn example() -> Self {
        Self {
            workload_kind: "Deployment".into(),
            workload: "api".into(),
            shared: vec![Shared {
                sharing: Sharing::Node,
                key: "node".into(),
                value: "worker-3".into(),
                baseline: vec!["worker-1".into(), "worker-2".into()],
            }],
            failing: vec![
                ("api-7d9f8c6b5-x2k4q".into(), "CrashLoopBackOff".into()),
                ("api-7d9f8c6b5-h8r2m".into(), "CrashLoopBackOff".into()),
                ("api-7d9f8c6b5-q9z7w".into(), "not ready".into()),
            ],
            baseline: vec![
                "api-7d9f8c6b5-b4n6c".into(),
                "api-7d9f8c6b5-m2k8d".into(),
                "api-7d9f8c6b5-t5w2x".into(),
                "api-7d9f8c6b5-v7p3s".into(),
            ],
            healthy_baseline: true,
            located: true,
            logs_differ: vec![LogDifference {
                key: "maxHeap".into(),
                failing: "44032 MiB".into(),
                healthy: "1434 MiB".into(),
            }],
        }
    }

    fn title(&self) -> String {
        let Some(first) = self.first() else {
            return format!("Failing pods of `{}`", self.workload);
        };
        let n = self.baseline.len();
        let (pods, run) = if n == 1 {
            ("pod", "runs")
        } else {
            ("pods", "run")
        };
        let instead = |format: &dyn Fn(&String) -> String| {
            listed(first.baseline.iter().map(format).collect())
        };
        let others = match (self.healthy_baseline, first.sharing) {
            (true, Sharing::Node) => format!("the {n} healthy {pods} {run} elsewhere"),
            (true, Sharing::NodeLabel) => format!(
                "the {n} healthy {pods} {run} on {}",
                instead(&|b| format!("`{}={b}`", first.key))
            ),
            (true, Sharing::Revision) => {
                format!(
                    "the {n} healthy {pods} {run} {}",
                    instead(&|b| format!("`{b}`"))
                )
            }
            (false, _) => format!("its {n} other {pods} {run} on other nodes"),
        };
        format!(
            "{} failing pods of `{}` all run {}; {others}",
            self.failing.len(),
            self.workload,
            first.phrase()
        )
    }

    fn detail(&self) -> String {
        let failing = listed(
            self.failing
                .iter()
                .map(|(pod, why)| format!("`{pod}` ({why})"))
                .collect(),
        );
        let shared = self
            .shared
            .iter()
            .map(Shared::phrase)
            .collect::<Vec<_>>()
            .join(" and ");
        let baseline = if self.healthy_baseline {
            "healthy pods"
        } else {
            "other pods"
        };
        let why = match self.first().map(|s| s.sharing) {
            Some(Sharing::Revision) => {
                "what sets the failing pods apart is their revision: compare its template with the \
                 healthy pods'"
            }
            _ if self.located => {
                "they run the same revision and differ only in where they run: the failure is \
                 the place's, not the code's"
            }
            _ => "what sets the failing pods apart is where they run, not the code every pod runs",
        };
        let differ = if self.logs_differ.is_empty() {
            String::new()
        } else {
            let each: Vec<String> = self
                .logs_differ
                .iter()
                .map(|d| format!("`{}={}` (healthy: `{}`)", d.key, d.failing, d.healthy))
                .collect();
            format!(
                " There, their processes log {} — what the place changes in them.",
                each.join(", ")
            )
        };
        format!(
            "Failing: {failing}; all run {shared}. Its {baseline} ({}) do not: {why}.{differ}",
            names(self.baseline.iter().map(String::as_str))
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Workload, self.workload.clone()))
    }

    fn role(&self) -> Role {
        if self.located {
            Role::Cause
        } else {
            Role::Context
        }
    }

    /// Located, it explains how each failing pod failed (its crash line, exit, OOM kill, crash
    /// loop, failing probe) and, for a Job's pods, the Job's failure.
    fn explains(&self, effect: &Finding) -> bool {
        if !self.located {
            return false;
        }
        let of_failing_pod = || {
            effect
                .resource()
                .is_some_and(|pod| self.failing.iter().any(|(name, _)| *name == pod))
        };
        match effect.kind() {
            Kind::CrashLine
            | Kind::Exited
            | Kind::OomKilled
            | Kind::CrashLoop
            | Kind::ProbeFailure
            | Kind::ErrorLine => of_failing_pod(),
            Kind::JobFailed => {
                self.workload_kind == "Job" && effect.resource().as_deref() == Some(&self.workload)
            }
            _ => false,
        }
    }

    fn step(&self, scene: &Scene) -> String {
        let workload = &self.workload;
        match self.first() {
            Some(Shared {
                sharing: Sharing::Node,
                value: node,
                ..
            }) => format!(
                "Check node `{node}`, where every failing pod of `{workload}` runs: `kubectl \
                 describe node {node}` (conditions, pressure, taints) and its kubelet's log; \
                 cordoning it shows whether the pods recover elsewhere."
            ),
            Some(Shared {
                sharing: Sharing::NodeLabel,
                key,
                value,
                ..
            }) => format!(
                "Compare the nodes with `{key}={value}`, where every failing pod of `{workload}` \
                 runs, with the healthy pods' nodes (`kubectl get nodes -L {key}`) before \
                 suspecting the application."
            ),
            _ => format!(
                "Compare the failing pods' revision of `{workload}` with the healthy pods' \
                 (`kubectl -n {} rollout history {}`): what changed between them is where to look.",
                scene.namespace,
                self.kind_ref()
            ),
        }
    }

    /// The node the failing pods share; and, located, their logs beside a healthy sibling's.
    fn leads(&self) -> Vec<Lead> {
        let nodes = self
            .shared
            .iter()
            .filter(|s| s.sharing == Sharing::Node)
            .map(|s| Lead::Node {
                name: s.value.clone(),
            });
        let compare = self
            .baseline
            .first()
            .filter(|_| self.located && self.healthy_baseline)
            .map(|healthy| Lead::CompareLogs {
                failing: self
                    .failing
                    .iter()
                    .take(COMPARED_FAILING)
                    .map(|(name, _)| name.clone())
                    .collect(),
                healthy: healthy.clone(),
            });
        nodes.chain(compare).collect()
    }
}

/// One pod the round shows: what it is, and where it was read.
struct Pod<'a> {
    info: PodInfo,
    /// (kind, name) of the workload it belongs to.
    workload: (String, String),
    evidence: &'a Evidence,
    text: &'a str,
    failing: Option<String>,
    healthy: bool,
}

/// One Node object the round holds.
struct Node<'a> {
    name: String,
    object: &'a Value,
    evidence: &'a Evidence,
    text: &'a str,
}

impl Node<'_> {
    fn value(&self, key: &str) -> Option<&str> {
        if NODE_INFO.contains(&key) {
            kube::str_at(self.object, &format!("/status/nodeInfo/{key}"))
        } else {
            self.object
                .pointer("/metadata/labels")
                .and_then(|l| l.get(key))
                .and_then(Value::as_str)
        }
    }
}

/// The settings each pod's logs state, one value per key (a key whose value changes within
/// one pod's log is a request's, not a setting).
fn settings(round: &Round<'_>, pod: &str) -> BTreeMap<String, String> {
    let mut seen: BTreeMap<String, Option<String>> = BTreeMap::new();
    let logs = round
        .evidence
        .iter()
        .filter(|e| e.capability.is_container_log() && e.string_arg(&["name", "pod"]) == Some(pod));
    for line in logs.flat_map(|e| e.excerpt.lines()) {
        for c in SETTING.captures_iter(line) {
            let value = c[2].trim_matches('"').to_string();
            seen.entry(c[1].to_string())
                .and_modify(|v| {
                    if v.as_deref() != Some(value.as_str()) {
                        *v = None;
                    }
                })
                .or_insert(Some(value));
        }
    }
    seen.into_iter()
        .filter_map(|(key, value)| value.map(|v| (key, v)))
        .collect()
}

/// Settings every failing pod's log states alike ([`AGREEING_LOGS`] of them at least) and every
/// healthy baseline pod's log states otherwise.
fn log_differences(round: &Round<'_>, found: &SharedByFailing) -> Vec<LogDifference> {
    let failing: Vec<BTreeMap<String, String>> = found
        .failing
        .iter()
        .map(|(name, _)| settings(round, name))
        .filter(|s| !s.is_empty())
        .collect();
    let healthy: Vec<BTreeMap<String, String>> = found
        .baseline
        .iter()
        .map(|name| settings(round, name))
        .filter(|s| !s.is_empty())
        .collect();
    let (Some(first), false) = (failing.first(), healthy.is_empty()) else {
        return Vec::new();
    };
    first
        .iter()
        .filter_map(|(key, value)| {
            let failing_values: Vec<&String> = failing.iter().filter_map(|s| s.get(key)).collect();
            let healthy_values: Vec<&String> = healthy.iter().filter_map(|s| s.get(key)).collect();
            let agreed =
                failing_values.len() >= AGREEING_LOGS && failing_values.iter().all(|v| *v == value);
            let other = healthy_values.first()?;
            (agreed && healthy_values.iter().all(|v| v == other) && *other != value).then(|| {
                LogDifference {
                    key: key.clone(),
                    failing: value.clone(),
                    healthy: (*other).clone(),
                }
            })
        })
        .take(MAX_DIFFERENCES)
        .collect()
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let pods = read_pods(round);
    let nodes = read_nodes(round);
    let mut workloads: Vec<&(String, String)> = Vec::new();
    for pod in &pods {
        if pod.failing.is_some() && !workloads.contains(&&pod.workload) {
            workloads.push(&pod.workload);
        }
    }
    workloads
        .into_iter()
        .filter_map(|workload| {
            let own: Vec<&Pod<'_>> = pods.iter().filter(|p| &p.workload == workload).collect();
            shared_by_failing(workload, &own, &nodes, |node| {
                round.found.iter().any(|f| {
                    matches!(&f.fact, Fact::KernelFault(k) if k.node == node) && f.verified
                })
            })
        })
        .map(|mut finding| {
            if let Fact::SharedByFailing(found) = &mut finding.fact
                && found.located
            {
                found.logs_differ = log_differences(round, found);
            }
            finding
        })
        .collect()
}

/// The finding for one workload's pods, when its failing pods share what the baseline lacks.
fn shared_by_failing(
    (kind, workload): &(String, String),
    own: &[&Pod<'_>],
    nodes: &[Node<'_>],
    node_faulted: impl Fn(&str) -> bool,
) -> Option<Finding> {
    let failing: Vec<&Pod<'_>> = own
        .iter()
        .copied()
        .filter(|p| p.failing.is_some())
        .collect();
    if failing.len() < 2 {
        return None;
    }
    let healthy: Vec<&Pod<'_>> = own.iter().copied().filter(|p| p.healthy).collect();
    let node_of = |p: &Pod<'_>| p.info.node.clone();
    let mut shared: Vec<Shared> = Vec::new();
    let mut baseline_pods: Vec<&Pod<'_>> = healthy.clone();
    let mut healthy_baseline = true;
    if let Some(node) = common(&failing, node_of) {
        let healthy_placed = placed(&healthy);
        let others: Vec<&Pod<'_>> = own
            .iter()
            .copied()
            .filter(|p| p.failing.is_none() && !p.healthy)
            .collect();
        let others_placed = placed(&others);
        let elsewhere = |p: &&Pod<'_>| p.info.node.as_deref() != Some(node.as_str());
        // Healthy siblings all elsewhere; or, with none, the workload runs on other nodes too.
        let baseline = if !healthy_placed.is_empty() {
            healthy_placed
                .iter()
                .all(elsewhere)
                .then_some(healthy_placed)
        } else {
            others_placed.iter().any(elsewhere).then_some(others_placed)
        };
        if let Some(baseline) = baseline {
            healthy_baseline = !healthy.is_empty();
            shared.push(Shared {
                sharing: Sharing::Node,
                key: "node".into(),
                baseline: distinct(baseline.iter().filter_map(|p| node_of(p))),
                value: node,
            });
            baseline_pods = baseline;
        }
    }
    if healthy.is_empty() && shared.is_empty() {
        return None;
    }
    let node_named = |p: &Pod<'_>| {
        let name = p.info.node.as_deref()?;
        nodes.iter().find(|n| n.name == name)
    };
    // A shared node implies its labels: name them only when the node itself is not shared.
    if shared.is_empty() {
        for key in NODE_KEYS {
            let value_of = |p: &Pod<'_>| node_named(p)?.value(key).map(str::to_string);
            if let Some(value) = common(&failing, value_of) {
                let known: Vec<String> = healthy.iter().filter_map(|p| value_of(p)).collect();
                if !known.is_empty() && !known.contains(&value) {
                    shared.push(Shared {
                        sharing: Sharing::NodeLabel,
                        key: key.to_string(),
                        value,
                        baseline: distinct(known),
                    });
                }
            }
        }
    }
    if healthy_baseline {
        for label in REVISION_LABELS {
            let value_of = |p: &Pod<'_>| p.info.labels.get(*label).cloned();
            if let Some(value) = common(&failing, value_of) {
                let known: Vec<String> = healthy.iter().filter_map(|p| value_of(p)).collect();
                if !known.is_empty() && !known.contains(&value) {
                    shared.push(Shared {
                        sharing: Sharing::Revision,
                        key: label.to_string(),
                        value,
                        baseline: distinct(known),
                    });
                }
            }
        }
    }
    if shared.is_empty() {
        return None;
    }
    let refs = citations(&shared, &failing, &baseline_pods, &healthy, nodes);
    if refs.is_empty() {
        return None;
    }
    // A shared revision alone is what a rollout already shows: it ranks after the round's other
    // observations; a shared node or node generation is news.
    let confidence = match shared[0].sharing {
        Sharing::Revision => Confidence::Low,
        _ => Confidence::Medium,
    };
    // A fault the node's own kernel reports corroborates the place: two failing pods there
    // and one healthy sibling elsewhere locate it.
    let corroborated = shared[0].sharing == Sharing::Node && node_faulted(&shared[0].value);
    let (least_failing, least_healthy) = if corroborated {
        (2, 1)
    } else {
        (LOCATED_FAILING, LOCATED_HEALTHY)
    };
    let located = shared[0].sharing != Sharing::Revision
        && healthy_baseline
        && failing.len() >= least_failing
        && baseline_pods.len() >= least_healthy
        && same_revision(&failing, &healthy);
    let finding = SharedByFailing {
        workload_kind: kind.clone(),
        workload: workload.clone(),
        shared,
        failing: failing
            .iter()
            .map(|p| (p.info.name.clone(), p.failing.clone().unwrap_or_default()))
            .collect(),
        baseline: baseline_pods.iter().map(|p| p.info.name.clone()).collect(),
        healthy_baseline,
        located,
        logs_differ: Vec::new(),
    };
    Some(Finding::new(finding, confidence, located).citing(refs))
}

/// Whether every failing pod runs a revision some healthy pod runs too (where the pods say).
fn same_revision(failing: &[&Pod<'_>], healthy: &[&Pod<'_>]) -> bool {
    REVISION_LABELS.iter().all(|label| {
        let known: Vec<&String> = healthy
            .iter()
            .filter_map(|p| p.info.labels.get(*label))
            .collect();
        known.is_empty()
            || failing
                .iter()
                .filter_map(|p| p.info.labels.get(*label))
                .all(|value| known.contains(&value))
    })
}

/// The pods whose node is known.
fn placed<'p, 'a>(set: &[&'p Pod<'a>]) -> Vec<&'p Pod<'a>> {
    set.iter()
        .copied()
        .filter(|p| p.info.node.is_some())
        .collect()
}

/// The line of a pod's text naming its node: `nodeName:`, describe's `Node:`, a table's row.
fn node_line<'a>(pod: &Pod<'a>, node: &str) -> Option<&'a str> {
    line_holding(pod.text, node, &["nodeName", "Node:", &pod.info.name])
}

/// The value every pod has, when all have the same one.
fn common(pods: &[&Pod<'_>], value: impl Fn(&Pod<'_>) -> Option<String>) -> Option<String> {
    let first = value(pods.first()?)?;
    pods.iter()
        .all(|p| value(p).as_deref() == Some(first.as_str()))
        .then_some(first)
}

fn distinct(values: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// For the first shared property: the lines of the failing pods (or their nodes) holding it, the
/// first failing pod's reason, and a baseline pod's (or node's) own value.
fn citations(
    shared: &[Shared],
    failing: &[&Pod<'_>],
    baseline: &[&Pod<'_>],
    healthy: &[&Pod<'_>],
    nodes: &[Node<'_>],
) -> Vec<Citation> {
    let mut refs: Vec<Citation> = Vec::new();
    let mut add = |evidence: &Evidence, line: Option<&str>| {
        if let Some(quote) = line.map(quote_line).filter(|q| !q.is_empty()) {
            let citation = cite(evidence, quote);
            if !refs.contains(&citation) {
                refs.push(citation);
            }
        }
    };
    let Some(first) = shared.first() else {
        return Vec::new();
    };
    let node_object = |pod: &Pod<'_>| {
        nodes
            .iter()
            .find(|n| Some(n.name.as_str()) == pod.info.node.as_deref())
    };
    for pod in failing.iter().take(3) {
        match first.sharing {
            Sharing::Node => add(pod.evidence, node_line(pod, &first.value)),
            Sharing::Revision => add(
                pod.evidence,
                line_holding(pod.text, &first.value, &[&first.key]),
            ),
            Sharing::NodeLabel => {
                if let Some(node) = node_object(pod) {
                    add(
                        node.evidence,
                        line_holding(node.text, &first.value, &[&first.key]),
                    );
                }
            }
        }
    }
    if let Some((pod, why)) = failing
        .first()
        .and_then(|p| Some((p, p.failing.as_deref()?)))
    {
        add(
            pod.evidence,
            line_holding(pod.text, why, &["reason", "Reason", "phase"]),
        );
    }
    let compared = if first.sharing == Sharing::Node {
        baseline
    } else {
        healthy
    };
    if let Some(pod) = compared.first() {
        match first.sharing {
            Sharing::Node => {
                if let Some(node) = pod.info.node.as_deref() {
                    add(pod.evidence, node_line(pod, node));
                }
            }
            Sharing::Revision => {
                if let Some(value) = pod.info.labels.get(&first.key) {
                    add(pod.evidence, line_holding(pod.text, value, &[&first.key]));
                }
            }
            Sharing::NodeLabel => {
                if let Some(node) = node_object(pod)
                    && let Some(value) = node.value(&first.key)
                {
                    add(node.evidence, line_holding(node.text, value, &[&first.key]));
                }
            }
        }
    }
    refs.truncate(MAX_REFS);
    refs
}

/// The line of `text` holding `value`, preferring one that also holds one of `hints` (the key,
/// the pod's name in a table row).
fn line_holding<'a>(text: &'a str, value: &str, hints: &[&str]) -> Option<&'a str> {
    if value.is_empty() {
        return None;
    }
    let holding = || text.lines().filter(|l| l.contains(value));
    hints
        .iter()
        .find_map(|hint| holding().find(|l| l.contains(hint)))
        .or_else(|| holding().next())
}

/// The round's pods: its descriptions and single objects, then its pod lists item by item (or
/// as a table), each pod once.
fn read_pods<'a>(round: &'a Round<'_>) -> Vec<Pod<'a>> {
    let mut out: Vec<Pod<'a>> = Vec::new();
    let mut push =
        |info: PodInfo, object: Option<&Value>, evidence: &'a Evidence, text: &'a str| {
            if out.iter().any(|p| p.info.name == info.name) {
                return;
            }
            let Some(workload) = workload_of(&info) else {
                return;
            };
            let now = round.ctx.alert_start.unwrap_or(evidence.fetched_at);
            let failing = failing_now(&info, object, now);
            let finished = info.status == "Succeeded" || info.status == "Completed";
            let proven = || {
                info.created
                    .as_deref()
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                    .is_none_or(|t| now - t.with_timezone(&Utc) >= BASELINE_AGE)
            };
            let healthy = failing.is_none()
                && info.restarts == 0
                && ((info.status == "Running" && info.ready == Some(true) && proven())
                    || (finished && workload.0 == "Job"));
            out.push(Pod {
                info,
                workload,
                evidence,
                text,
                failing,
                healthy,
            });
        };
    for (evidence, object) in round.pods() {
        if matches!(
            evidence.capability,
            Capability::PodDescribe | Capability::ObjectGet
        ) && is_pod(object)
            && let Some(info) = kube::pod_from_object(object)
        {
            push(info, Some(object), evidence, &evidence.excerpt);
        }
    }
    for evidence in round.evidence {
        match evidence.capability {
            Capability::PodDescribe => {
                // Describe text (not an object): what it says of the pod it names.
                if let Some(name) = evidence.string_arg(&["name"])
                    && let Some(info) = kube::pod_of(&evidence.excerpt, name)
                {
                    push(info, None, evidence, &evidence.excerpt);
                }
            }
            Capability::PodList | Capability::ObjectList => {
                let items: Vec<&(&Evidence, &str, Value)> = round
                    .items()
                    .iter()
                    .filter(|(e, ..)| std::ptr::eq(*e, evidence))
                    .collect();
                if items.is_empty() {
                    for info in kube::pods_in_list(&evidence.excerpt) {
                        push(info, None, evidence, &evidence.excerpt);
                    }
                }
                for (_, text, object) in items {
                    if is_pod(object)
                        && let Some(info) = kube::pod_from_object(object)
                    {
                        push(info, Some(object), evidence, text);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn is_pod(object: &Value) -> bool {
    match kube::str_at(object, "/kind") {
        Some(kind) => kind == "Pod",
        None => object.pointer("/spec/containers").is_some(),
    }
}

/// The Nodes the round's object views hold, each from its own item.
fn read_nodes<'a>(round: &'a Round<'_>) -> Vec<Node<'a>> {
    let mut out: Vec<Node<'a>> = Vec::new();
    for (evidence, text, object) in round.items() {
        let Some(name) = kube::str_at(object, "/metadata/name").map(str::to_string) else {
            continue;
        };
        if kube::str_at(object, "/kind") != Some("Node") {
            continue;
        }
        let node = Node {
            name,
            object,
            evidence,
            text,
        };
        // A node read on its own says more than a list cut to fit: keep the fuller one.
        match out.iter_mut().find(|n| n.name == node.name) {
            Some(seen) if label_count(seen.object) < label_count(node.object) => *seen = node,
            Some(_) => {}
            None => out.push(node),
        }
    }
    out
}

fn label_count(object: &Value) -> usize {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map_or(0, |labels| labels.len())
}

/// The workload a pod belongs to: a Deployment through its ReplicaSet, a StatefulSet,
/// DaemonSet or Job (one Job's pods run one template: a CronJob's runs are Jobs of their own);
/// none for a static pod.
fn workload_of(pod: &PodInfo) -> Option<(String, String)> {
    match &pod.owner {
        Some((kind, name)) if kind == "ReplicaSet" => Some(match kube::deployment_of(pod) {
            Some(deployment) => ("Deployment".to_string(), deployment),
            None => (kind.clone(), name.clone()),
        }),
        Some((kind, name)) if matches!(kind.as_str(), "StatefulSet" | "DaemonSet" | "Job") => {
            Some((kind.clone(), name.clone()))
        }
        Some(_) => None,
        // An excerpt may keep a pod's labels but not its owner.
        None => match pod.labels.get("job-name") {
            Some(job) => Some(("Job".to_string(), job.clone())),
            None => kube::deployment_of_name(&pod.name).map(|d| ("Deployment".to_string(), d)),
        },
    }
}

/// A running pod younger than this has not shown it is healthy yet (a retry placed a minute ago
/// on the node that fails every pod): it is no baseline.
const BASELINE_AGE: Duration = Duration::minutes(10);

/// An OOM kill this recent fails a pod that runs again (a leak kills it every few hours); one
/// older is history, as `standing` holds an old termination under a container that has run since.
const RECENT_OOM: Duration = Duration::hours(6);

/// Why a pod counts as failing at `now`: as [`failing`] says, or (its object read) a container
/// OOM-killed within [`RECENT_OOM`] before `now`. `revisions` asks it whether a new revision's
/// pods fail.
pub(super) fn failing_now(
    pod: &PodInfo,
    object: Option<&Value>,
    now: DateTime<Utc>,
) -> Option<String> {
    let recent_oom = || {
        object
            .and_then(|o| o.pointer("/status/containerStatuses"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|s| kube::str_at(s, "/lastState/terminated/reason") == Some("OOMKilled"))
            .filter_map(|s| kube::str_at(s, "/lastState/terminated/finishedAt"))
            .filter_map(|t| DateTime::parse_from_rfc3339(t).ok())
            .any(|t| now - t.with_timezone(&Utc) <= RECENT_OOM)
    };
    failing(pod).or_else(|| recent_oom().then(|| "OOMKilled".to_string()))
}

/// Why a pod counts as failing: Failed or Evicted, a container waiting for a bad reason or
/// terminated badly, OOM-killed last time and not ready since, Pending on its node, or running
/// but not ready.
fn failing(pod: &PodInfo) -> Option<String> {
    if pod.status == "Failed" || pod.status == "Evicted" || pod.reason.as_deref() == Some("Evicted")
    {
        return Some(pod.reason.clone().unwrap_or_else(|| pod.status.clone()));
    }
    let containers = &pod.containers;
    if let Some(reason) = containers.iter().find_map(|c| {
        c.waiting
            .as_deref()
            .filter(|r| !matches!(*r, "ContainerCreating" | "PodInitializing"))
    }) {
        return Some(reason.to_string());
    }
    if let Some((reason, _)) = containers.iter().find_map(|c| {
        c.terminated
            .as_ref()
            .filter(|(reason, code)| *code != 0 || reason == "OOMKilled")
    }) {
        return Some(reason.clone());
    }
    // An OOM kill that ended a previous instance fails the pod only while it is not ready
    // again: one from days ago, under a container that has run since, is history.
    let oom_killed = containers.iter().any(|c| {
        c.last_terminated
            .as_ref()
            .is_some_and(|(reason, _)| reason == "OOMKilled")
    });
    if oom_killed && pod.ready != Some(true) {
        return Some("OOMKilled".into());
    }
    let status = pod.status.as_str();
    if status.contains("BackOff") || status.contains("Error") || status == "OOMKilled" {
        return Some(status.to_string());
    }
    if status == "Pending" && pod.node.is_some() {
        return Some("Pending".into());
    }
    (status == "Running" && pod.ready == Some(false)).then(|| "not ready".to_string())
}

#[cfg(test)]
mod tests;
