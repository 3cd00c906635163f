//! The words every detector part speaks: a finding's role, confidence, citations, standing and
//! subject, what a kind declares about itself ([`KindSpec`], [`Payload`]), and the symptom an
//! alert is about ([`Symptom`]).
//!
//! A finding is data, never prose to be read back: its [`Fact`](super::Fact) is a typed payload
//! (the objects, numbers, times and verbatim quotes it rests on) and everything said about it —
//! its title, its detail, how it merges, what it explains, its next step — is computed from
//! that payload by the kind that owns it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::evidence::{Evidence, EvidenceId};

use super::{Fact, Finding, Lead};

/// What part a finding plays in the story of an incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Why something failed: may headline, when verified and it explains the alert's symptom.
    Cause,
    /// That something is wrong, not why (a crash loop, a failed job, a metric step).
    Symptom,
    /// What followed from a cause (pods Pending after their node was lost, exit 143 after a
    /// drain, an autoscaler at its maximum under load): never a headline.
    Consequence,
    /// True, but not this alert's story (a recovery, routine noise, superseded evidence).
    Context,
}

impl Role {
    /// A cause, or a consequence when the finding only `follows` from something else (exit 143
    /// after a drain, a pod Pending on a lost node, a Service emptied by failing pods).
    pub fn cause_unless_it_follows(follows: bool) -> Role {
        if follows {
            Role::Consequence
        } else {
            Role::Cause
        }
    }
}

/// How sure the detector is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    /// `high`, `medium`, `low`, as a report says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// A verbatim quote from one evidence item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Citation {
    pub evidence: EvidenceId,
    pub quote: String,
}

/// A citation of `quote` in `evidence`. Callers pass text cut from the evidence's excerpt, so
/// the quote is verbatim by construction; the debug assertion guards that in tests.
pub(crate) fn cite(evidence: &Evidence, quote: String) -> Citation {
    debug_assert!(
        evidence.excerpt.contains(&quote),
        "quote must be verbatim: {quote:?}"
    );
    Citation {
        evidence: evidence.id,
        quote,
    }
}

/// Whether what a finding shows is still the state of things. A finding that is not
/// [`Standing::Current`] is context whatever its kind: it never headlines.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "standing", rename_all = "snake_case")]
pub enum Standing {
    #[default]
    Current,
    /// Newer evidence shows a later state (the pod was scheduled after the FailedScheduling
    /// event; the container has run cleanly since a restart days ago).
    Superseded { because: String },
    /// A pattern every healthy cluster shows (kubelet start-up warnings, one failed probe while
    /// a container starts).
    Routine { class: Routine },
    /// About an object the investigation did not reach from the alert.
    Unrelated,
}

impl Standing {
    /// Why the finding is context, in words for the report; `None` when current.
    pub fn why(&self) -> Option<String> {
        match self {
            Standing::Current => None,
            Standing::Superseded { because } => Some(format!("superseded: {because}")),
            Standing::Routine { class } => Some(format!("routine: {}", class.describe())),
            Standing::Unrelated => {
                Some("about an object the alert does not lead to: context".to_string())
            }
        }
    }
}

/// A pattern every healthy cluster shows: never a cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Routine {
    /// `MountVolume.SetUp failed for volume "kube-api-access-…" : object "ns"/"kube-root-ca.crt"
    /// not registered`: the kubelet's informer has not synced the namespace's CA bundle yet
    /// when a pod starts; it retries and mounts it a moment later.
    KubeRootCaNotRegistered,
    /// `FailedCreatePodSandBox` / `SandboxChanged` on a pod that runs now: the CNI was not ready
    /// the first time.
    SandboxAtStartup,
    /// `DNSConfigForming`: the node's resolv.conf has more nameservers or search domains than a
    /// pod can use; printed for every pod on such a node.
    DnsConfigForming,
    /// A probe that failed once (or only) while its container was starting.
    ProbeAtStartup,
}

impl Routine {
    /// What the class is, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Routine::KubeRootCaNotRegistered => {
                "the kubelet's start-up warning about kube-root-ca.crt, which every pod may print \
                 before its namespace's CA bundle syncs"
            }
            Routine::SandboxAtStartup => {
                "a pod sandbox that failed while the pod started, on a pod that runs now"
            }
            Routine::DnsConfigForming => {
                "a DNSConfigForming warning the node's resolv.conf causes for every pod on it"
            }
            Routine::ProbeAtStartup => "a probe failure while the container was starting",
        }
    }
}

/// What kind of object a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    Pod,
    Workload,
    Job,
    Node,
    Claim,
    Volume,
    Service,
    Autoscaler,
    Quota,
    /// A dependency's address (`host:port`) or host name.
    Endpoint,
    /// A span of a trace: the service it runs in.
    Span,
    /// A metric series (its identifying labels).
    Series,
    /// A cert-manager `Certificate`.
    Certificate,
}

/// The object a finding is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Subject {
    pub kind: ObjectKind,
    pub name: String,
}

impl Subject {
    pub fn new(kind: ObjectKind, name: impl Into<String>) -> Self {
        Self {
            kind,
            name: name.into(),
        }
    }

    /// `Some(subject)` when there is a name.
    pub fn named(kind: ObjectKind, name: Option<&str>) -> Option<Self> {
        name.filter(|n| !n.is_empty()).map(|n| Self::new(kind, n))
    }
}

/// Resources match when equal, when one is unknown, when one is a pod of the other
/// (`payments-api` and `payments-api-7d9f8c6b5-x2k4q`), or when both are replicas of one
/// ReplicaSet (`…-7d9f8c6b5-x2k4q` and `…-7d9f8c6b5-h8r2m`).
pub fn same_resource(a: Option<&str>, b: Option<&str>) -> bool {
    let replica_set = |pod: &str| {
        pod.rsplit_once('-')
            .filter(|(_, suffix)| {
                suffix.len() == 5 && suffix.chars().all(|c| c.is_ascii_alphanumeric())
            })
            .map(|(rs, _)| rs.to_string())
            .filter(|rs| rs.contains('-'))
    };
    match (a, b) {
        (Some(a), Some(b)) => {
            a == b
                || a.starts_with(&format!("{b}-"))
                || b.starts_with(&format!("{a}-"))
                || replica_set(a).is_some_and(|rs| replica_set(b) == Some(rs))
        }
        _ => true,
    }
}

/// Two optional subjects are the same object (see [`same_resource`]).
pub fn same_subject(a: Option<&Subject>, b: Option<&Subject>) -> bool {
    same_resource(a.map(|s| s.name.as_str()), b.map(|s| s.name.as_str()))
}

/// Whether two names are known and name the same pod or workload (see [`same_resource`]):
/// unlike [`same_resource`], an unknown name matches nothing, so a rule that links two findings
/// by it links only what both name.
pub fn same_pod(a: Option<&str>, b: Option<&str>) -> bool {
    a.is_some() && b.is_some() && same_resource(a, b)
}

/// Whether a pod ran for a Job: both are named and the pod is the Job's (`nightly-report-x7k2p`
/// of `nightly-report`). A failure of an unnamed pod explains no Job: a round may hold many.
pub fn pod_of_job(pod: Option<&str>, job: Option<&str>) -> bool {
    same_pod(pod, job)
}

/// What an alert is about, as far as a cause must explain it: a cause headlines only when its
/// kind accounts for the alert's symptom, directly or through what it explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Symptom {
    /// Containers restart, crash or are killed.
    Restarts,
    /// Pods are not ready, not running or Pending; replicas are missing; a rollout is stuck.
    Unavailable,
    /// A Job or CronJob failed or did not complete.
    JobFailed,
    /// Requests fail (error ratio, 5xx, a target down).
    Errors,
    /// Requests are slow (latency, timeouts).
    Latency,
    /// CPU or memory is saturated (throttling, an autoscaler at its maximum, memory high).
    Saturation,
    /// A node is not ready, under pressure, or its filesystem is filling.
    Node,
    /// Storage: a claim pending, a volume failed, a disk filling.
    Storage,
    /// The alert says nothing the symptoms above name: any cause may account for it.
    Any,
}

/// Symptoms most failures of a workload's pods account for.
pub const POD_FAILURES: &[Symptom] = &[
    Symptom::Restarts,
    Symptom::Unavailable,
    Symptom::JobFailed,
    Symptom::Errors,
];

/// Symptoms a dependency's failure, read from an application's log, accounts for: those of
/// its pods and the slowness of the service they serve.
pub const SERVICE_FAILURES: &[Symptom] = &[
    Symptom::Restarts,
    Symptom::Unavailable,
    Symptom::JobFailed,
    Symptom::Errors,
    Symptom::Latency,
];

/// What a kind declares about itself, once (its payload type's [`Payload::SPEC`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KindSpec {
    /// Its name in reports and metrics: `oom-killed`.
    pub name: &'static str,
    /// The part it plays unless the payload says otherwise ([`Payload::role`]).
    pub role: Role,
    /// What the evidence must show for a finding of this kind to count as verified.
    pub verified_when: &'static str,
    /// The alert symptoms a finding of this kind explains directly.
    pub accounts_for: &'static [Symptom],
}

impl KindSpec {
    /// A cause read from an application's log (a dependency it cannot reach, a pool it cannot
    /// draw from): verified as [`super::logscan`] decides, and accounting for what the failure
    /// of a service's pods shows.
    pub const fn read_from_log(name: &'static str) -> Self {
        Self {
            name,
            role: Role::Cause,
            verified_when: "a container crashed and the error ends its log, or it repeats at \
                            error level under a service-level alert",
            accounts_for: SERVICE_FAILURES,
        }
    }
}

impl KindSpec {
    /// Whether this kind explains `symptom` directly (any kind explains [`Symptom::Any`]).
    pub fn accounts_for(&self, symptom: Symptom) -> bool {
        symptom == Symptom::Any || self.accounts_for.contains(&symptom)
    }
}

/// The names a next step uses: the alert's objects, and the headline's chain.
#[derive(Debug, Clone)]
pub struct Scene {
    /// The alert's namespace, or `<namespace>`.
    pub namespace: String,
    pub pod: Option<String>,
    pub workload: Option<String>,
    pub container: Option<String>,
    /// `deployment/payments-api`, or `the workload`.
    pub workload_ref: String,
    /// `around 14:02 UTC`.
    pub when: String,
    /// The chain is the report's verified headline: a step may act on it (roll back, scale),
    /// not only look further.
    pub headline: bool,
}

impl Scene {
    /// `kubectl -n NS logs POD -c C --previous`, or a Job's `logs job/NAME` (a Job's failed
    /// runs are pods of their own, not restarts).
    pub fn previous_log_command(&self, pod: Option<&str>, container: Option<&str>) -> String {
        let container = container
            .or(self.container.as_deref())
            .map(|c| format!(" -c {c}"))
            .unwrap_or_default();
        let pod = pod.or(self.pod.as_deref());
        match (pod, self.workload_ref.strip_prefix("job/")) {
            (None, Some(_)) => format!(
                "kubectl -n {} logs {}{container}",
                self.namespace, self.workload_ref
            ),
            (pod, _) => format!(
                "kubectl -n {} logs {}{container} --previous",
                self.namespace,
                pod.unwrap_or("<pod>")
            ),
        }
    }

    /// The workload to fix for a failure of `object` (a pod or ReplicaSet): the alert's when
    /// it is one of the alert's, else the Deployment its name says owns it — a step must not
    /// send the reader to edit the alert's workload for a neighbour's failure.
    pub fn workload_of(&self, object: Option<&str>) -> String {
        match object {
            Some(name) if !same_pod(Some(name), self.workload.as_deref()) => {
                crate::kube::deployment_of_name(name).map_or_else(
                    || format!("the owner of `{name}`"),
                    |d| format!("deployment/{d}"),
                )
            }
            _ => self.workload_ref.clone(),
        }
    }

    /// `` `payments-api` `` or `the workload`.
    pub fn owner(&self) -> String {
        match &self.workload {
            Some(w) => format!("`{w}`"),
            None => "the workload".to_string(),
        }
    }
}

/// A kind's typed payload: the data a finding of that kind rests on, and everything said
/// about it. One impl per kind, in its detector's file; the registry in `detectors/mod.rs`
/// lists the kinds.
pub trait Payload: Sized + Clone + fmt::Debug + PartialEq + Into<Fact> {
    /// What the kind declares about itself.
    const SPEC: KindSpec;

    /// A typical finding of this kind (the registry's tests and the kinds table).
    fn example() -> Self;

    /// One line: what the evidence shows ("Container `api` OOMKilled (exit code 137)").
    fn title(&self) -> String;

    /// One or two sentences for the report.
    fn detail(&self) -> String;

    /// The object the finding is about.
    fn subject(&self) -> Option<Subject>;

    /// The part this finding plays; the kind's declared role unless its payload says
    /// otherwise (exit code 143 is a consequence of what sent the SIGTERM).
    fn role(&self) -> Role {
        Self::SPEC.role
    }

    /// Whether two findings of this kind are one (merged, citations pooled). Default: the
    /// same object.
    fn merges_with(&self, other: &Self) -> bool {
        same_subject(self.subject().as_ref(), other.subject().as_ref())
    }

    /// Takes from `other` (a finding it merges with) what this one lacks, so the merged finding
    /// keeps every detail either saw (the registry's answer one event carried). Default:
    /// nothing.
    fn merge_from(&mut self, other: &Self) {
        let _ = other;
    }

    /// The first thing to do about it, from the payload only.
    fn step(&self, scene: &Scene) -> String;

    /// Whether this finding explains `effect` (the typed "explains" rules: an OOM kill
    /// explains its container's restarts). Default: explains nothing.
    fn explains(&self, effect: &Finding) -> bool {
        let _ = effect;
        false
    }

    /// What to read next because of this finding: the host a client cannot use, the node a
    /// pod was evicted from. Default: nothing.
    fn leads(&self) -> Vec<Lead> {
        Vec::new()
    }
}

/// `` in `pod` `` for sentences, or nothing.
pub fn in_pod(pod: Option<&str>) -> String {
    pod.map(|p| format!(" in `{p}`")).unwrap_or_default()
}

/// ``Container `api` `` or `Container`.
pub fn container_label(container: Option<&str>) -> String {
    container.map_or("Container".to_string(), |c| format!("Container `{c}`"))
}
