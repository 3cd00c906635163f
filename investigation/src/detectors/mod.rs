//! Deterministic detectors: evidence in, typed and cited findings out (ARCHITECTURE.md,
//! "Works with no model").
//!
//! A detector is a **part**: one file per family (`containers.rs`, `nodes.rs`, …) holding its
//! `detect` function, the payload type of every kind it emits and, per kind, in one place
//! ([`Payload`]): its role (cause, symptom, consequence, context), what it needs to count as
//! verified, how two findings of it merge, what it explains, and its next step. The
//! [`registry!`] below lists every part with its kinds — adding a detector is one file and
//! one line there — and generates [`Fact`] (the payload of any kind) and [`Kind`].
//!
//! Parts run in the registry's order, each seeing the findings of the parts before it
//! ([`Round::found`]): a log line explains a crash only once the control plane showed one
//! (`containers` runs before `dependencies`), a deploy is verified by a metric step that
//! follows it (`steps` runs before `changes`). Then every finding's [`Standing`] is decided
//! (`standing.rs`: superseded by newer evidence, routine noise), findings of one kind about
//! one thing are merged, and the rest is ranked.
//!
//! Every finding cites the lines that prove it: each [`Citation`] quote is a verbatim
//! substring of the cited evidence's excerpt, so the judge's quote check passes for detector
//! output. Structural signals (a status field, a kubelet or scheduler event, an exit code, a
//! metric series) can verify a cause; lines written by applications never do on their own.
//! Text that tries to instruct the reader is ignored, so a log line saying "report that the
//! cause is DNS" never becomes a cause.

mod finding;
pub mod lead;
mod logscan;
pub mod series;
mod standing;
pub mod text;

pub mod autoscaler;
pub mod batch;
pub mod budgets;
pub mod certificates;
pub mod changes;
pub mod clocks;
pub mod config;
pub mod connections;
pub mod containers;
pub mod coverage;
pub mod cronjobs;
pub mod datastores;
pub mod dependencies;
pub mod disk;
pub mod disruptions;
pub mod endpoints;
pub mod errors;
pub mod gc;
pub mod hostpaths;
pub mod images;
pub mod jobs;
pub mod kernel;
pub mod leftovers;
pub mod limits;
pub mod memory;
pub mod nodes;
pub mod policies;
pub mod ports;
pub mod probes;
pub mod quota;
pub mod recovery;
pub mod refusals;
pub mod restarts;
pub mod revisions;
pub mod scheduling;
pub mod siblings;
pub mod slots;
pub mod spikes;
pub mod steps;
pub mod throttling;
pub mod traces;
pub mod volumes;

use std::fmt;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::evidence::{Capability, Evidence};
use firstline_alert::AlertTarget;

pub use config::ConfigProblem;
pub(crate) use finding::cite;
pub use finding::{
    Citation, Confidence, KindSpec, ObjectKind, POD_FAILURES, Payload, Role, Routine, Scene,
    Standing, Subject, Symptom, pod_of_job, same_pod, same_resource, same_subject,
};
pub use lead::Lead;
pub use series::{
    MetricSeries, StepChange, StepChangeParams, find_step_change, parse_prometheus_matrix,
};

/// Lists every part with the kinds it emits, in the order the parts run (which is also the
/// order that breaks ties between equally strong findings). Generates [`Fact`], [`Kind`], the
/// dispatch from a fact to its kind's [`Payload`] impl, and the parts' list.
macro_rules! registry {
    ($($part:ident: [$($kind:ident),+ $(,)?]),+ $(,)?) => {
        /// What a finding says: the typed payload of its kind.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum Fact {
            $($($kind($part::$kind),)+)+
        }

        /// Which kind a finding is.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Kind {
            $($($kind,)+)+
        }

        impl Kind {
            /// Every kind, in the registry's order.
            pub const ALL: &'static [Kind] = &[$($(Kind::$kind,)+)+];

            /// What the kind declares about itself.
            pub fn spec(self) -> &'static KindSpec {
                match self {
                    $($(Kind::$kind => &<$part::$kind as Payload>::SPEC,)+)+
                }
            }

            /// A typical finding of this kind.
            pub fn example(self) -> Fact {
                match self {
                    $($(Kind::$kind => Fact::$kind(<$part::$kind as Payload>::example()),)+)+
                }
            }

            /// The part (file) that owns the kind.
            pub fn part(self) -> &'static str {
                match self {
                    $($(Kind::$kind => stringify!($part),)+)+
                }
            }
        }

        impl Fact {
            pub fn kind(&self) -> Kind {
                match self {
                    $($(Fact::$kind(_) => Kind::$kind,)+)+
                }
            }

            pub fn title(&self) -> String {
                match self {
                    $($(Fact::$kind(p) => p.title(),)+)+
                }
            }

            pub fn detail(&self) -> String {
                match self {
                    $($(Fact::$kind(p) => p.detail(),)+)+
                }
            }

            pub fn subject(&self) -> Option<Subject> {
                match self {
                    $($(Fact::$kind(p) => p.subject(),)+)+
                }
            }

            pub fn role(&self) -> Role {
                match self {
                    $($(Fact::$kind(p) => p.role(),)+)+
                }
            }

            pub fn step(&self, scene: &Scene) -> String {
                match self {
                    $($(Fact::$kind(p) => p.step(scene),)+)+
                }
            }

            fn explains(&self, effect: &Finding) -> bool {
                match self {
                    $($(Fact::$kind(p) => p.explains(effect),)+)+
                }
            }

            /// What to read next because of this finding.
            pub fn leads(&self) -> Vec<Lead> {
                match self {
                    $($(Fact::$kind(p) => p.leads(),)+)+
                }
            }

            fn merges_with(&self, other: &Fact) -> bool {
                match (self, other) {
                    $($((Fact::$kind(a), Fact::$kind(b)) => a.merges_with(b),)+)+
                    _ => false,
                }
            }

            fn merge_from(&mut self, other: &Fact) {
                match (self, other) {
                    $($((Fact::$kind(a), Fact::$kind(b)) => a.merge_from(b),)+)+
                    _ => {}
                }
            }
        }

        $($(
            impl From<$part::$kind> for Fact {
                fn from(payload: $part::$kind) -> Self {
                    Fact::$kind(payload)
                }
            }
        )+)+

        /// The parts, in the order they run.
        const PARTS: &[Part] = &[$(Part { name: stringify!($part), detect: $part::detect },)+];
    };
}

registry! {
    jobs: [JobFailed],
    cronjobs: [CronJobSuspended],
    containers: [OomKilled, CrashLine, Exited, CrashLoop],
    config: [ConfigError],
    images: [ImagePull],
    scheduling: [Unschedulable],
    coverage: [DaemonSetSkipsNodes],
    certificates: [Certificate, CertificateIssued],
    dependencies: [Dependency],
    policies: [PolicyDenies],
    gc: [GcOverhead],
    connections: [ConnectionsExhausted],
    datastores: [DependencyWait, CacheFull, LockHeld],
    limits: [ProcessLimit],
    refusals: [Refusal],
    disk: [DiskFull],
    disruptions: [Disrupted],
    probes: [ProbeFailure],
    nodes: [NodeNotReady, NodePressure],
    hostpaths: [HostPathWriter],
    leftovers: [FailedWorkKept],
    volumes: [ProvisioningFailed, VolumeFailed, ClaimPending, VolumeFilling],
    slots: [SlotRetainsWal, DatabaseGrew],
    quota: [QuotaExceeded],
    endpoints: [NoEndpoints],
    ports: [PortMismatch],
    autoscaler: [AutoscalerMaxed],
    steps: [MetricStep, LoadGrowth],
    changes: [Rollout, ScaleChange],
    batch: [BatchStarted],
    restarts: [RestartTrend],
    memory: [MemoryGrowth],
    throttling: [CpuThrottling],
    budgets: [BudgetExhausted],
    spikes: [MetricSpike],
    traces: [SlowSpan],
    errors: [ErrorLine, WarningEvent],
    revisions: [RevisionDiff],
    kernel: [KernelFault],
    clocks: [ClockSkew],
    siblings: [SharedByFailing],
    recovery: [Recovered],
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec().name)
    }
}

/// One detector part: its name and its detection over a round's evidence.
struct Part {
    name: &'static str,
    detect: fn(&Round<'_>) -> Vec<Finding>,
}

/// What a part reads: the round's evidence, the alert's context, and what the parts before it
/// found.
pub struct Round<'a> {
    pub evidence: &'a [Evidence],
    pub ctx: &'a DetectionContext,
    pub found: &'a [Finding],
    /// The structural evidence, split per object (see [`Round::structural`]).
    views: &'a [(Evidence, DetectionContext)],
    /// The objects the evidence holds, parsed once (see [`Round::objects`]).
    parsed: &'a [(&'a Evidence, serde_json::Value)],
    /// Every item of the round's object views, parsed on its own (see [`Round::items`]).
    items: &'a [(&'a Evidence, &'a str, serde_json::Value)],
}

impl Round<'_> {
    /// Whether an earlier part saw a container or job fail: log lines explain a failure only
    /// when the control plane shows one happened.
    pub fn failure_observed(&self) -> bool {
        self.found.iter().any(|f| {
            matches!(
                f.kind(),
                Kind::CrashLoop | Kind::OomKilled | Kind::Exited | Kind::JobFailed
            )
        })
    }

    /// The round's structural evidence (object views and events), Kubernetes' own views first
    /// so merged findings lead with their cleanest quotes; an event list about many objects is
    /// split per object (see [`per_object`]). Split once a round, for every part.
    pub fn structural(&self) -> &[(Evidence, DetectionContext)] {
        self.views
    }

    /// The objects of `kind` (`Node`, `HorizontalPodAutoscaler`, …) the round's object views
    /// hold (kubernetes-mcp-server's `resources_get` / `resources_list`, the API's JSON), each
    /// with the evidence it came from.
    pub fn objects(&self, kind: &str) -> Vec<(&Evidence, &serde_json::Value)> {
        self.parsed
            .iter()
            .filter(|(e, o)| {
                matches!(
                    e.capability,
                    Capability::ObjectGet | Capability::ObjectList | Capability::Other(_)
                ) && crate::kube::str_at(o, "/kind") == Some(kind)
            })
            .map(|(e, o)| (*e, o))
            .collect()
    }

    /// The pods the round's descriptions and object views hold.
    pub fn pods(&self) -> Vec<(&Evidence, &serde_json::Value)> {
        self.parsed
            .iter()
            .filter(|(e, o)| {
                matches!(
                    e.capability,
                    Capability::PodDescribe | Capability::ObjectGet | Capability::ObjectList
                ) && crate::kube::str_at(o, "/kind").is_none_or(|k| k == "Pod")
            })
            .map(|(e, o)| (*e, o))
            .collect()
    }

    /// Every item of the round's lists and object views (`pods_list`, `resources_list`,
    /// `resources_get`), each parsed on its own — a list the excerpt cut still yields its
    /// intact items — with the evidence and the item's own text. Parsed once a round.
    pub fn items(&self) -> &[(&Evidence, &str, serde_json::Value)] {
        self.items
    }

    /// Every Kubernetes object the round's descriptions and object views hold, parsed once a
    /// round, with the evidence it came from.
    pub fn parsed_objects(&self) -> &[(&Evidence, serde_json::Value)] {
        self.parsed
    }

    /// Evidence of one capability.
    pub fn of(&self, capability: Capability) -> impl Iterator<Item = &Evidence> {
        self.evidence
            .iter()
            .filter(move |e| e.capability == capability)
    }

    /// Earlier findings of one kind.
    pub fn found_of(&self, kind: Kind) -> impl Iterator<Item = &Finding> {
        self.found.iter().filter(move |f| f.kind() == kind)
    }
}

/// What a detector found: a typed fact, how sure, the lines that prove it, when, and whether
/// it still stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub fact: Fact,
    pub confidence: Confidence,
    /// A detector-verified finding: the evidence shows it happened, by the kind's own rule
    /// ([`KindSpec::verified_when`]). Only a verified cause may be stated as confirmed.
    pub verified: bool,
    pub refs: Vec<Citation>,
    /// When it happened, when the detector can tell (deploy time, step start, an event).
    pub at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub standing: Standing,
}

impl Finding {
    /// A current finding of `fact`, with no citations yet.
    pub fn new(fact: impl Into<Fact>, confidence: Confidence, verified: bool) -> Self {
        Self {
            fact: fact.into(),
            confidence,
            verified,
            refs: Vec::new(),
            at: None,
            standing: Standing::Current,
        }
    }

    /// The same, citing `refs`.
    pub fn citing(mut self, refs: Vec<Citation>) -> Self {
        self.refs = refs;
        self
    }

    /// The same, dated.
    pub fn dated(mut self, at: Option<DateTime<Utc>>) -> Self {
        self.at = at;
        self
    }

    pub fn kind(&self) -> Kind {
        self.fact.kind()
    }

    pub fn title(&self) -> String {
        self.fact.title()
    }

    /// The kind's detail, and why the finding is context when it no longer stands.
    pub fn detail(&self) -> String {
        let detail = self.fact.detail();
        match self.standing.why() {
            Some(why) => format!("{detail} ({why}.)"),
            None => detail,
        }
    }

    pub fn subject(&self) -> Option<Subject> {
        self.fact.subject()
    }

    /// The name of the object it is about.
    pub fn resource(&self) -> Option<String> {
        self.subject().map(|s| s.name)
    }

    /// The part it plays: its kind's, unless it no longer stands (then context).
    pub fn role(&self) -> Role {
        match self.standing {
            Standing::Current => self.fact.role(),
            _ => Role::Context,
        }
    }

    /// A current, verified cause: what may headline.
    pub fn is_verified_cause(&self) -> bool {
        self.verified && self.role() == Role::Cause
    }

    /// Whether this finding explains `effect` (its kind's rules).
    pub fn explains(&self, effect: &Finding) -> bool {
        !std::ptr::eq(self, effect) && self.fact.explains(effect)
    }

    /// The next step for it.
    pub fn step(&self, scene: &Scene) -> String {
        self.fact.step(scene)
    }

    /// Adds `citation` unless it is there or the finding has `max` already.
    pub fn add_ref(&mut self, citation: Citation, max: usize) {
        if self.refs.len() < max && !self.refs.contains(&citation) {
            self.refs.push(citation);
        }
    }
}

/// What the detectors need besides evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectionContext {
    /// When the alert started; bounds the deploy window.
    pub alert_start: Option<DateTime<Utc>>,
    /// How long before the alert start a deploy counts as "inside the window".
    pub deploy_window_before: Duration,
    /// Grace after the alert start (clock skew between systems).
    pub deploy_window_after: Duration,
    /// A metric step starting this soon after a deploy ties the two together.
    pub deploy_step_correlation: Duration,
    pub step: StepChangeParams,
    /// The resource to name when evidence does not say (pod, else workload, from the alert).
    pub default_resource: Option<String>,
    /// The alert is about a workload's replicas (a rollout or replica-count alert), so the
    /// workload being fully available again means what the alert saw has ended.
    pub about_replicas: bool,
    /// The alert is about a service's requests failing or slowing (error rate, latency,
    /// timeouts): repeated failures in its logs corroborate it (see `logscan`).
    pub service_level: bool,
    /// What the alert is about, as a cause must explain it.
    pub symptom: Symptom,
    /// The node the alert names, when it names one.
    pub alert_node: Option<String>,
    /// The volume claim the alert names, when it names one (a volume filling up).
    pub alert_claim: Option<String>,
    /// The namespace the alert names, when it names one: a claim's name alone is not unique.
    pub alert_namespace: Option<String>,
    /// The query the round re-ran for the alert's own expression, and the threshold it fires
    /// at: whether what the alert measures is back on the good side of it.
    pub alert_query: Option<AlertQuery>,
}

/// The alert's own expression as the round re-ran it.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertQuery {
    pub query: String,
    /// The comparison the expression ends with (`> 0.05`), when it ends with one.
    pub threshold: Option<Threshold>,
}

/// The side of a value the alert fires on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    Above(f64),
    Below(f64),
}

/// An expression up to its first `and`, `unless` or `or` outside parentheses.
fn first_term(expression: &str) -> &str {
    let mut depth = 0i32;
    let bytes = expression.as_bytes();
    for (i, c) in expression.char_indices() {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth -= 1,
            _ if depth == 0 && i > 0 && bytes[i - 1].is_ascii_whitespace() => {
                let rest = &expression[i..];
                if ["and ", "unless ", "or ", "and(", "unless(", "or("]
                    .iter()
                    .any(|w| rest.starts_with(w))
                {
                    return &expression[..i];
                }
            }
            _ => {}
        }
    }
    expression
}

impl Threshold {
    /// The comparison an expression ends with (`… > 0.05`, `… < 1`), if any; for a rule that
    /// filters its first term with `and` / `unless` / `or` (`a / b < 0.03 and used > 0 unless
    /// … == 1`), the first term's.
    pub fn of_expression(expression: &str) -> Option<Self> {
        static TAIL: std::sync::LazyLock<regex::Regex> =
            regex!(r"(>=|<=|>|<)\s*(-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*\)?\s*$");
        let first = first_term(expression);
        let caps = TAIL
            .captures(first.trim())
            .or_else(|| TAIL.captures(expression.trim()))?;
        let value: f64 = caps[2].parse().ok()?;
        Some(match &caps[1] {
            ">" | ">=" => Threshold::Above(value),
            _ => Threshold::Below(value),
        })
    }

    /// Whether `value` is on the side the alert fires on.
    pub fn breached_by(self, value: f64) -> bool {
        match self {
            Threshold::Above(t) => value > t,
            Threshold::Below(t) => value < t,
        }
    }
}

impl Default for DetectionContext {
    fn default() -> Self {
        Self {
            alert_start: None,
            deploy_window_before: Duration::minutes(30),
            deploy_window_after: Duration::minutes(2),
            deploy_step_correlation: Duration::minutes(15),
            step: StepChangeParams::default(),
            default_resource: None,
            about_replicas: false,
            service_level: false,
            symptom: Symptom::Any,
            alert_node: None,
            alert_claim: None,
            alert_namespace: None,
            alert_query: None,
        }
    }
}

impl DetectionContext {
    /// Context for an alert: its start time, its pod/workload as the default resource, and its
    /// symptom.
    pub fn for_alert(target: &AlertTarget) -> Self {
        Self {
            alert_start: target.starts_at,
            default_resource: target
                .pod
                .clone()
                .or_else(|| target.workload.clone())
                .or_else(|| target.service.clone()),
            about_replicas: target.alertname.as_deref().is_some_and(about_replicas),
            service_level: is_service_level(target),
            symptom: alert_symptom(target),
            alert_node: target.node.clone(),
            alert_claim: target.volume_claim.clone(),
            alert_namespace: target.namespace.clone(),
            ..Self::default()
        }
    }
}

/// Whether the alert is about a service's requests: its name, summary or description speaks of
/// errors, 5xx, latency, timeouts, availability, request durations, or the share of its work
/// that fails.
pub fn is_service_level(target: &AlertTarget) -> bool {
    // A catalogue alert says what it is about: a pod, a workload, a volume, a node or a quota
    // is never a service's requests, whatever its text says ("resource requests",
    // `KubePersistentVolumeErrors`). The control plane's alerts may be (API latency, errors).
    if let Some(rule) = target
        .alertname
        .as_deref()
        .and_then(crate::catalogue::lookup)
        && rule.focus != crate::catalogue::Focus::ControlPlane
    {
        return false;
    }
    // A managed resource's own alert (its exporter's dimension labels): its clients' repeated
    // failures toward it are what it measures.
    if target.labels.keys().any(|k| series::is_dimension(k)) {
        return true;
    }
    let words = alert_words(target);
    [
        "error",
        "5xx",
        "latency",
        "slow",
        "timeout",
        "availability",
        "request",
        "http",
        "p99",
        "p95",
        "duration",
        "failure rate",
        "failure ratio",
        "failures",
        "success rate",
        "success ratio",
        "failing",
    ]
    .iter()
    .any(|w| words.contains(w))
}

/// The alert's name, rule, summary and description, lowercased.
pub(crate) fn alert_words(target: &AlertTarget) -> String {
    [
        &target.alertname,
        &target.rule,
        &target.summary,
        &target.description,
    ]
    .iter()
    .filter_map(|s| s.as_deref())
    .collect::<Vec<_>>()
    .join(" ")
    .to_ascii_lowercase()
}

/// What the alert is about, as a cause must explain it: from the catalogue's focus and the
/// alert's name for a catalogue alert; from its name, then its summary and description, for
/// another; [`Symptom::Any`] when they say nothing a symptom names.
pub fn alert_symptom(target: &AlertTarget) -> Symptom {
    use crate::catalogue::Focus;
    let name = target
        .alertname
        .as_deref()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if let Some(rule) = target
        .alertname
        .as_deref()
        .and_then(crate::catalogue::lookup)
    {
        return match rule.focus {
            Focus::Pod => match symptom_in(&name, true) {
                Symptom::Any | Symptom::Node => Symptom::Unavailable,
                symptom => symptom,
            },
            Focus::Workload => Symptom::Unavailable,
            Focus::Job => Symptom::JobFailed,
            Focus::Node => Symptom::Node,
            Focus::Volume => Symptom::Storage,
            Focus::Autoscaler => Symptom::Saturation,
            Focus::Quota
            | Focus::ControlPlane
            | Focus::Monitoring
            | Focus::Network
            | Focus::Other => Symptom::Any,
        };
    }
    // A run that never finished, as a dead man's switch titles it (`MISSED: nightly-export did
    // not complete`): said of the rule or a title-like value, never of requests in prose.
    let unfinished = |text: &str| {
        let text = text.to_ascii_lowercase();
        UNFINISHED.iter().any(|p| text.contains(p))
    };
    if target.rule.as_deref().is_some_and(unfinished) {
        return Symptom::JobFailed;
    }
    match symptom_in(&name, true) {
        Symptom::Any => {
            let text = [&target.rule, &target.summary, &target.description]
                .iter()
                .filter_map(|s| s.as_deref())
                .collect::<Vec<_>>()
                .join(" ")
                .to_ascii_lowercase();
            match symptom_in(&text, false) {
                // A webhook's free text may put its whole title in a `key: value` line.
                Symptom::Any if target.labels.values().any(|v| unfinished(v)) => Symptom::JobFailed,
                symptom => symptom,
            }
        }
        symptom => symptom,
    }
}

/// The symptom `words` name. An alert's name may say it with one word (`JobFailed`,
/// `ServiceDown`); its prose needs more, since `job`, `node` and `down` are in every
/// Prometheus label set.
/// How a run that never finished is said.
const UNFINISHED: [&str; 7] = [
    "did not complete",
    "didn't complete",
    "not completed",
    "did not finish",
    "didn't finish",
    "did not run",
    "didn't run",
];

fn symptom_in(words: &str, name: bool) -> Symptom {
    let has = |needles: &[&str]| needles.iter().any(|n| words.contains(n));
    if has(&[
        "crashloop",
        "crash loop",
        "restart",
        "oomkill",
        "oom kill",
        "crashing",
        "out of memory",
    ]) {
        Symptom::Restarts
    } else if has(&[
        "job failed",
        "jobfailed",
        "cronjob",
        "backoff limit",
        "backofflimit",
    ]) || (name && has(&["job", "cron"]))
    {
        Symptom::JobFailed
    } else if has(&[
        "pvc",
        "volume",
        "persistentvolume",
        "filesystem",
        "disk",
        "inode",
    ]) {
        Symptom::Storage
    } else if has(&["hpa", "autoscal", "throttl", "saturat", "cpu", "memory"]) {
        Symptom::Saturation
    } else if has(&["latency", "slow", "duration", "p99", "p95"]) {
        Symptom::Latency
    } else if has(&[
        "error",
        "5xx",
        "availability",
        "targetdown",
        "target down",
        "is down",
    ]) || (name && has(&["down", "fail", "stopped"]))
    {
        Symptom::Errors
    } else if has(&[
        "notready",
        "not ready",
        "pending",
        "unavailable",
        "replica",
        "rollout",
        "waiting",
        "mismatch",
        "stuck",
    ]) {
        Symptom::Unavailable
    } else if has(&["node not ready", "nodenotready"]) || (name && has(&["node"])) {
        Symptom::Node
    } else {
        Symptom::Any
    }
}

/// Whether an alert of this name is about a workload's replicas: the catalogue's workload
/// alerts (replica mismatches, stuck rollouts, generation mismatches), or a custom alert named
/// for replicas or a rollout.
fn about_replicas(alertname: &str) -> bool {
    let lower = alertname.to_ascii_lowercase();
    crate::catalogue::lookup(alertname)
        .is_some_and(|rule| rule.focus == crate::catalogue::Focus::Workload)
        || ["replica", "rollout", "unavailable"]
            .iter()
            .any(|w| lower.contains(w))
}

/// Runs every part over the round's evidence, decides each finding's standing, merges
/// findings of one kind about one thing and ranks the rest.
pub fn run_detectors(evidence: &[Evidence], ctx: &DetectionContext) -> Vec<Finding> {
    let views = structural_views(evidence, ctx);
    let parsed = parse_objects(evidence);
    let items = parse_items(evidence);
    let mut findings: Vec<Finding> = Vec::new();
    for part in PARTS {
        let round = Round {
            evidence,
            ctx,
            found: &findings,
            views: &views,
            parsed: &parsed,
            items: &items,
        };
        let found = (part.detect)(&round);
        tracing::trace!(part = part.name, found = found.len(), "detector part ran");
        findings.extend(found);
    }
    let all = Round {
        evidence,
        ctx,
        found: &[],
        views: &views,
        parsed: &parsed,
        items: &items,
    };
    standing::decide(&mut findings, &all);
    let mut merged = merge(findings);
    rank_findings(&mut merged);
    merged
}

/// The Kubernetes objects of the round's descriptions and object views.
fn parse_objects(evidence: &[Evidence]) -> Vec<(&Evidence, serde_json::Value)> {
    evidence
        .iter()
        .filter(|e| {
            matches!(
                e.capability,
                Capability::PodDescribe
                    | Capability::ObjectGet
                    | Capability::ObjectList
                    | Capability::Other(_)
            )
        })
        .flat_map(|e| {
            crate::kube::objects(&e.excerpt)
                .into_iter()
                .map(move |o| (e, o))
        })
        .collect()
}

/// The items of the round's lists and object views, each parsed on its own.
fn parse_items(evidence: &[Evidence]) -> Vec<(&Evidence, &str, serde_json::Value)> {
    evidence
        .iter()
        .filter(|e| {
            matches!(
                e.capability,
                Capability::PodList
                    | Capability::ObjectGet
                    | Capability::ObjectList
                    | Capability::Other(_)
            )
        })
        .flat_map(|e| {
            revisions::records(&e.excerpt)
                .into_iter()
                .map(move |(text, object)| (e, text, object))
        })
        .collect()
}

/// Object views and events, Kubernetes' own views first, each event list split per object.
fn structural_views(
    evidence: &[Evidence],
    ctx: &DetectionContext,
) -> Vec<(Evidence, DetectionContext)> {
    let mut items: Vec<&Evidence> = evidence.iter().filter(|e| text::is_structural(e)).collect();
    items.sort_by_key(|e| match e.capability {
        Capability::PodDescribe | Capability::ObjectGet | Capability::ObjectList => 0,
        Capability::Events => 1,
        _ => 2,
    });
    items
        .into_iter()
        .flat_map(|item| per_object(item, ctx))
        .collect()
}

/// An event list about many objects (a namespace's warnings), split into one part per involved
/// object with that object as the default resource, so a neighbour's event is attributed to the
/// neighbour. Each part's excerpt is a verbatim slice of the item's, so quotes stay verbatim.
/// Anything else is one part.
fn per_object(item: &Evidence, ctx: &DetectionContext) -> Vec<(Evidence, DetectionContext)> {
    let whole = || vec![(item.clone(), ctx.clone())];
    // Events fetched for one object are that object's.
    let named = item.string_arg(&["fieldSelector"]).and_then(|selector| {
        selector
            .split(',')
            .find_map(|term| term.trim().strip_prefix("involvedObject.name="))
            .map(str::to_string)
    });
    if let Some(name) = named {
        let mut part_ctx = ctx.clone();
        part_ctx.default_resource = Some(name);
        return vec![(item.clone(), part_ctx)];
    }
    if item.capability == Capability::ObjectList && item.string_arg(&["kind"]) == Some("Pod") {
        return pods_apart(item, ctx).unwrap_or_else(whole);
    }
    if item.capability != Capability::Events {
        return whole();
    }
    let lines: Vec<&str> = item.excerpt.lines().collect();
    if !lines.iter().any(|l| l.trim_start().starts_with("- ")) {
        return whole();
    }
    text::event_blocks(&lines)
        .into_iter()
        .map(|block| {
            // The involved object's name: the first `name:` of the event's block.
            let name = text::event_field(&block, "name").map(|(name, _)| name.to_string());
            let mut part = item.clone();
            part.excerpt = block.join("\n");
            let mut part_ctx = ctx.clone();
            if name.is_some() {
                part_ctx.default_resource = name;
            }
            (part, part_ctx)
        })
        .collect()
}

/// A list of pods across namespaces (a YAML sequence), one part per pod with that pod as the
/// default resource, so a neighbour's OOM kill is the neighbour's. `None` when the excerpt is
/// not such a list.
fn pods_apart(
    item: &Evidence,
    ctx: &DetectionContext,
) -> Option<Vec<(Evidence, DetectionContext)>> {
    let lines: Vec<&str> = item.excerpt.lines().collect();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("- "))
        .map(|(i, _)| i)
        .collect();
    if starts.len() < 2 || starts[0] != 0 {
        return None;
    }
    let parts = starts
        .iter()
        .enumerate()
        .map(|(n, &start)| {
            let end = starts.get(n + 1).copied().unwrap_or(lines.len());
            let block = lines[start..end].join("\n");
            let name = crate::kube::objects(&block)
                .first()
                .and_then(|pod| crate::kube::str_at(pod, "/metadata/name").map(str::to_string));
            let mut part = item.clone();
            part.excerpt = block;
            let mut part_ctx = ctx.clone();
            if name.is_some() {
                part_ctx.default_resource = name;
            }
            (part, part_ctx)
        })
        .collect();
    Some(parts)
}

/// Current findings first, then verified, then by confidence, then by the registry's order.
pub fn rank_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (b.standing == Standing::Current)
            .cmp(&(a.standing == Standing::Current))
            .then(b.verified.cmp(&a.verified))
            .then(b.confidence.cmp(&a.confidence))
            .then(a.kind().cmp(&b.kind()))
    });
}

/// Most citations one merged finding keeps.
const MAX_REFS: usize = 4;

/// Joins findings of one kind about one thing (a crash loop seen in the describe output and in
/// events; a dependency one pod and another log): the stronger is kept, citations are pooled.
fn merge(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for finding in findings {
        let same = out
            .iter_mut()
            .find(|f| f.standing == finding.standing && f.fact.merges_with(&finding.fact));
        match same {
            Some(existing) => {
                let (mut keep, other) = if (finding.verified, finding.confidence)
                    > (existing.verified, existing.confidence)
                {
                    (finding, existing.clone())
                } else {
                    (existing.clone(), finding)
                };
                keep.fact.merge_from(&other.fact);
                for citation in other.refs {
                    keep.add_ref(citation, MAX_REFS);
                }
                keep.at = keep.at.or(other.at);
                *existing = keep;
            }
            None => out.push(finding),
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
