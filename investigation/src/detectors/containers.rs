//! Containers that die: the kubelet's account of a pod's containers (`kubectl describe` text,
//! YAML/JSON object dumps, event lists) — crash loops, exits and OOM kills — and the line a
//! crashed process wrote last.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`OomKilled`] | cause | the kubelet reports `OOMKilled` (or exit 137 beside an OOM event) |
//! | [`CrashLine`] | cause | a container of the pod crashed, and the line is the one its log died on (at error level) |
//! | [`Exited`] | symptom; consequence for SIGTERM/SIGKILL and lost containers; cause when the runtime says why | the runtime's own message says why |
//! | [`CrashLoop`] | symptom | never: a crash loop is *that* it dies, not why |
//!
//! What explains what: an OOM kill explains its container's exits, crash loop and restarts; a
//! crash line explains its pod's exits and crash loop (and its Job's failure).

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use firstline_model::text::prefix;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::finding::{container_label, in_pod, pod_of_job};
use super::logscan::LogScan;
use super::text::{
    below_error_level, container_for_line, embedded_reason, error_chain_gist, field, field_value,
    is_application_log, is_table, looks_like_injection, matching_line, message_of, object_name,
    quote_from, quote_line, table_rows_about,
};
use super::{
    Confidence, DetectionContext, Fact, Finding, Kind, KindSpec, ObjectKind, POD_FAILURES, Payload,
    Role, Round, Scene, Subject, Symptom, cite, same_pod,
};
use crate::evidence::{Capability, Evidence};
use crate::kube;

static CRASH_LOOP: LazyLock<Regex> = regex!(r"\bCrashLoopBackOff\b");
static BACKOFF_RESTART: LazyLock<Regex> =
    regex!(r"(?i)back-off \S+ ?restarting failed container(?:[= ]([A-Za-z0-9._-]+))?");
static OOM_EVENT: LazyLock<Regex> =
    regex!(r"(?i)\bOOMKill(?:ed|ing)\b|out of memory|memory cgroup out of memory");
static CRASH_LINE: LazyLock<Regex> = regex!(
    r"(?i)(\berr(or)?\b|\bfatal\b|\bpanic|exception\b|\bfail(ed|ure|s)?\b|\brefused\b|\bdenied\b|\bnot found\b|no such|\bmissing\b|\brequired\b|\binvalid\b|\bcannot\b|\bcan't\b|\bunable\b|could not|couldn't|\bundefined\b|not set\b|\bexpired\b|\btimed? ?out\b|\bkilled\b|\babort|segmentation|traceback|\bexit(ed|ing)?\b|x509|no space left)"
);
static STRONG_CRASH_LINE: LazyLock<Regex> =
    regex!(r"^\s*(panic:|fatal error:|Exception in thread|FATAL\b)");
static EXCEPTION_LINE: LazyLock<Regex> =
    regex!(r"^\s*(?:[A-Za-z_][\w$]*\.)*[A-Z]\w*(?:Error|Exception)(?: \(|: )\S");
/// A line that sums up a failure that was retried.
static RETRY_SUMMARY: LazyLock<Regex> = regex!(
    r"(?i)\bafter \d+ (?:retries|attempts|tries)\b|\bretries exhausted\b|\bmax(?:imum)? retries\b|\bgiving up\b"
);
/// A failure with a status or a class, as a retried call logs it.
static RETRIED_FAILURE: LazyLock<Regex> = regex!(
    r"(?i)\b(?:HTTP|status(?: code)?)[ =:/]*[45]\d\d\b|\btoo many requests\b|\brate[ _-]?limit|\bthrottl|\btimed? ?out\b|\bconnection (?:refused|reset)|\bunavailable\b|\baccess denied\b|\bforbidden\b|\bunauthori[sz]ed\b"
);
/// How far back from a retry summary the retried failure is looked for.
const RETRY_LOOKBACK: usize = 50;
/// The line that ends a Python traceback: the exception raised, unindented.
static PYTHON_RAISED: LazyLock<Regex> = regex!(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*: \S");
/// A line that announces an error without saying what it is: the next line says.
static BANNER: LazyLock<Regex> = regex!(
    r"(?i)(?::\s*$|\(\d+ errors?\)\s*$|\b(?:configuration|config|settings?|arguments?|options?) (?:is )?(?:invalid|error|errors)\s*[.!]?\s*$|\bfailed to (?:start|load|parse|initiali[sz]e)\b[^:]*$|\berrors? (?:occurred|found)\b[^:]*$)"
);
/// The process starting to stop: errors after this are its teardown, not why it stopped.
static TEARDOWN: LazyLock<Regex> = regex!(
    r"(?i)\b(?:shutting down|shutdown (?:requested|initiated|started)|graceful(?:ly)? shut|stopping (?:server|service|application)|received (?:signal|SIGTERM|SIGINT)|terminating)\b"
);
/// A message that only says the process exits (`exiting {"code": 1}`, `aborting`).
static ONLY_EXITS: LazyLock<Regex> = regex!(
    r#"(?i)^(?:(?:exit(?:ing|ed)?|shutting down|aborting|stopped|terminat(?:ing|ed)|bye)\b[^A-Za-z]*(?:code|status)?[^A-Za-z]*$|(?:(?:error|fatal):?\s*)?[\w.-]+ (?:exited|terminated|stopped)(?: unexpectedly)?,? with (?:exit )?(?:code|status) \d+\.?\s*$|(?:(?:error|fatal):?\s*)?[\w.-]+ did not exit normally\b|[\w.-]+ exit (?:code|status):? \d+\.?\s*$)"#
);

/// The termination reason the kubelet records when a container disappeared without a status
/// (eviction, pod deletion, node loss); it comes with exit code 137 and a bookkeeping message.
const CONTAINER_LOST: &str = "ContainerStatusUnknown";

/// A container killed for running out of memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OomKilled {
    pub pod: Option<String>,
    pub container: Option<String>,
    pub exit_code: Option<i32>,
    /// The container's memory limit as its spec says (`256Mi`).
    pub limit: Option<String>,
}

impl Payload for OomKilled {
    const SPEC: KindSpec = KindSpec {
        name: "oom-killed",
        role: Role::Cause,
        verified_when: "the kubelet reports reason OOMKilled for the container, or exit code 137 \
                        beside an OOM event",
        accounts_for: &[
            Symptom::Restarts,
            Symptom::Unavailable,
            Symptom::JobFailed,
            Symptom::Errors,
            Symptom::Saturation,
        ],
    };

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            container: Some("api".into()),
            exit_code: Some(137),
            limit: Some("256Mi".into()),
        }
    }

    fn title(&self) -> String {
        match self.exit_code {
            Some(code) => format!(
                "{} OOMKilled (exit code {code})",
                container_label(self.container.as_deref())
            ),
            None => format!("{} OOMKilled", container_label(self.container.as_deref())),
        }
    }

    fn detail(&self) -> String {
        let code = self
            .exit_code
            .map(|c| format!(", exit code {c}"))
            .unwrap_or_default();
        format!(
            "{}{} was killed for running out of memory (OOMKilled{code}){}.",
            container_label(self.container.as_deref()),
            in_pod(self.pod.as_deref()),
            self.limit
                .as_deref()
                .map(|l| format!("; its memory limit is {l}"))
                .unwrap_or_default()
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    /// The limit one view of the pod shows (its description) and another cut (a list).
    fn merge_from(&mut self, other: &Self) {
        if self.limit.is_none() {
            self.limit = other.limit.clone();
        }
    }

    fn step(&self, scene: &Scene) -> String {
        let which = self
            .container
            .as_deref()
            .map_or("the container".to_string(), |c| format!("`{c}`"));
        let now = self
            .limit
            .as_deref()
            .map(|l| format!(" (now {l})"))
            .unwrap_or_default();
        format!(
            "Check what {which} needs at peak (`container_memory_working_set_bytes` over the last \
             hours): if it is a spike the limit{now} is too low for, raise it in {}; if it only \
             grows, look for a leak first.",
            scene.workload_ref
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        match &effect.fact {
            Fact::Exited(e) => same_container(&self.pod, &self.container, &e.pod, &e.container),
            Fact::CrashLoop(c) => same_container(&self.pod, &self.container, &c.pod, &c.container),
            Fact::RestartTrend(r) => same_pod(self.pod.as_deref(), r.pod.as_deref()),
            Fact::ProbeFailure(p) => same_pod(self.pod.as_deref(), p.pod.as_deref()),
            // The kernel's SIGKILL leaves no last words: the log just stops.
            Fact::CrashLine(c) => same_pod(self.pod.as_deref(), c.pod.as_deref()),
            Fact::JobFailed(j) => pod_of_job(self.pod.as_deref(), j.job.as_deref()),
            _ => false,
        }
    }
}

/// The line a crashed process wrote last (and the line after it when that one only announced
/// an error).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashLine {
    pub pod: Option<String>,
    pub container: Option<String>,
    /// The line, verbatim.
    pub line: String,
    /// The line after a banner (`ERROR configuration invalid:`) that says what is wrong, or
    /// the part of the line itself that does (the last error of a message spanning lines).
    pub deciding: Option<String>,
    /// `deciding` is part of `line`.
    #[serde(default)]
    pub deciding_within: bool,
    /// Read from the previous (crashed) container's log rather than the current one.
    pub from_previous: bool,
    /// The container was stopped by a signal (exit 143 or 137) before it wrote this: its last
    /// words are its teardown, a consequence of whatever sent the signal.
    #[serde(default)]
    pub after_signal: bool,
    /// A setting of the node's kernel the line names (`vm.max_map_count`), with the node the
    /// pod ran on when the round shows it: the node's to fix, not the container's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_setting: Option<NodeSetting>,
}

/// A kernel setting (a sysctl) a crash names, and the node it is set on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeSetting {
    pub key: String,
    pub node: Option<String>,
}

/// A log line's time to the second, as it opens the line (`2025-01-01T00:00:00`,
/// `[2025/01/01 00:00:00]`, `2025-01-01 00:00:00,412`).
static SECOND: LazyLock<Regex> = regex!(r"^\W{0,2}\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}:\d{2}");

/// A sysctl key as processes name it in their complaints (`vm.max_map_count`,
/// `fs.inotify.max_user_watches`, `net.core.somaxconn`).
/// Not a package path (`java.net.http`): the key stands on its own.
static SYSCTL: LazyLock<Regex> = regex!(
    r"(?:^|[^\w./])((?:vm|fs|kernel)\.[a-z0-9_]+(?:\.[a-z0-9_]+)*|net\.(?:core|ipv4|ipv6|netfilter|unix)\.[a-z0-9_]+(?:\.[a-z0-9_]+)*)\b"
);

impl CrashLine {
    /// What the process said, without its timestamp and level: the deciding line when the
    /// crash line was a banner.
    fn said(&self) -> String {
        match &self.deciding {
            Some(deciding) if self.deciding_within => message_of(deciding),
            Some(deciding) => format!(
                "{} {}",
                message_of(&self.line).trim_end_matches(':'),
                deciding.trim()
            ),
            None => message_of(&self.line),
        }
    }
}

impl Payload for CrashLine {
    const SPEC: KindSpec = KindSpec {
        name: "crash-line",
        role: Role::Cause,
        verified_when: "a container of the pod crashed (a crash loop, an abnormal exit or a \
                        failed job) and the line is the one its log died on (a raised \
                        exception, a fatal line, else the last error before any teardown), \
                        logged at error level or above (a consequence when a signal stopped the \
                        container first)",
        accounts_for: POD_FAILURES,
    };

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            container: Some("api".into()),
            line:
                "2025-03-04T14:02:02Z ERROR migration V58 failed: must be owner of table accounts"
                    .into(),
            deciding: None,
            deciding_within: false,
            from_previous: true,
            after_signal: false,
            node_setting: None,
        }
    }

    fn title(&self) -> String {
        format!(
            "{} crashed: `{}`",
            container_label(self.container.as_deref()),
            prefix(&self.said(), 140)
        )
    }

    fn detail(&self) -> String {
        let node = match &self.node_setting {
            Some(NodeSetting {
                key,
                node: Some(node),
            }) => format!(
                " It names `{key}`, a setting of the kernel of node `{node}`, which the pod ran on."
            ),
            Some(NodeSetting { key, node: None }) => {
                format!(" It names `{key}`, a setting of the node's kernel.")
            }
            None => String::new(),
        };
        format!(
            "The last error line in the {}{} before it failed: `{}`{node}",
            if self.from_previous {
                "previous container's log"
            } else {
                "container log"
            },
            self.pod
                .as_deref()
                .map(|p| format!(" of `{p}`"))
                .unwrap_or_default(),
            prefix(self.line.trim(), 240)
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn role(&self) -> Role {
        Role::cause_unless_it_follows(self.after_signal)
    }

    fn merges_with(&self, other: &Self) -> bool {
        same_pod(self.pod.as_deref(), other.pod.as_deref()) || self.line == other.line
    }

    fn step(&self, scene: &Scene) -> String {
        if let Some(NodeSetting { key, node }) = &self.node_setting {
            let on = node
                .as_deref()
                .map_or("the node".to_string(), |n| format!("node `{n}`"));
            return format!(
                "`{key}` is the node's kernel setting, not the container's: set it on {on} and \
                 every node of its group (the node group's user data, or a privileged init \
                 container or DaemonSet that sets it), then let the pod restart; pods on nodes \
                 that set it already start."
            );
        }
        format!(
            "Fix what the crash line names, then read the crashed container's whole log to \
             confirm nothing else failed: `{}`.",
            scene.previous_log_command(self.pod.as_deref(), self.container.as_deref())
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        pod_failure_explains(self.pod.as_deref(), effect)
    }
}

/// A container that exited with a non-zero code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exited {
    pub pod: Option<String>,
    pub container: Option<String>,
    pub code: i32,
    /// The termination reason (`Error`, `StartError`, `ContainerStatusUnknown`).
    pub reason: Option<String>,
    /// The runtime's own message about why, when it gave one.
    pub message: Option<String>,
    /// When that termination finished.
    pub finished_at: Option<DateTime<Utc>>,
    /// The node the pod was on, where its description says.
    #[serde(default)]
    pub node: Option<String>,
}

impl Exited {
    /// The kubelet lost track of the container (`ContainerStatusUnknown`): its node failed or
    /// its pod was evicted or deleted.
    pub fn lost(&self) -> bool {
        self.reason.as_deref() == Some(CONTAINER_LOST)
    }

    /// Nothing in the termination itself says why (a log line may).
    pub fn cause_unknown(&self) -> bool {
        self.message.is_none() && !self.lost()
    }

    /// Killed by a signal from outside the process: SIGTERM (143) from a drain, a deadline, a
    /// rollout or a failed liveness probe; SIGKILL (137) after one.
    pub fn signalled(&self) -> bool {
        matches!(self.code, 137 | 143) || self.lost()
    }

    fn meaning(&self) -> &'static str {
        if self.lost() {
            return "the kubelet lost track of the container (its pod was evicted, deleted or \
                    its node failed); the exit code is a placeholder, not the process's own";
        }
        match self.code {
            1 => "the application reported a general error",
            2 => "misuse of a shell builtin or bad arguments",
            78 => "configuration error (EX_CONFIG)",
            126 => "the command is not executable",
            127 => "command not found",
            128 => "the container process could not be started",
            134 => "aborted (SIGABRT)",
            137 => "killed with SIGKILL (out of memory or a failed liveness probe)",
            139 => "segmentation fault (SIGSEGV)",
            143 => "terminated with SIGTERM (a drain, a deadline, a rollout or a liveness probe)",
            _ => "the process failed",
        }
    }
}

impl Payload for Exited {
    const SPEC: KindSpec = KindSpec {
        name: "exit-code",
        role: Role::Symptom,
        verified_when: "the container runtime's own message says why the process ended",
        accounts_for: POD_FAILURES,
    };

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            container: Some("api".into()),
            code: 78,
            reason: Some("Error".into()),
            message: None,
            finished_at: None,
            node: Some("worker-3".into()),
        }
    }

    fn title(&self) -> String {
        let reason = self
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        // The runtime's message is a Go error chain whose root comes last: told by its gist.
        let said = self
            .message
            .as_deref()
            .map(|m| format!(": {}", prefix(&error_chain_gist(m.trim()), 200)))
            .unwrap_or_default();
        format!(
            "{} exited with code {}{reason}{said}",
            container_label(self.container.as_deref()),
            self.code
        )
    }

    fn detail(&self) -> String {
        let reason = self
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let mut detail = format!(
            "{}{} exited with code {}{reason}: {}.",
            container_label(self.container.as_deref()),
            in_pod(self.pod.as_deref()),
            self.code,
            self.meaning()
        );
        if let Some(message) = &self.message {
            detail.push_str(&format!(" The runtime reported: {message}"));
        }
        detail
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn role(&self) -> Role {
        if self.message.is_some() {
            Role::Cause
        } else if self.signalled() {
            Role::Consequence
        } else {
            Role::Symptom
        }
    }

    fn step(&self, scene: &Scene) -> String {
        if self.message.is_some() {
            return format!(
                "Fix what the runtime reports in {}'s container spec (command, image, \
                 entrypoint) and roll out; `kubectl -n {} describe pod {}` shows the message.",
                scene.owner(),
                scene.namespace,
                self.pod
                    .as_deref()
                    .or(scene.pod.as_deref())
                    .unwrap_or("<pod>")
            );
        }
        format!(
            "Read the crashed container's whole log: `{}`.",
            scene.previous_log_command(self.pod.as_deref(), self.container.as_deref())
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        self.message.is_some()
            && matches!(&effect.fact, Fact::CrashLoop(c)
                if same_container(&self.pod, &self.container, &c.pod, &c.container))
    }
}

/// A container the kubelet keeps restarting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashLoop {
    pub pod: Option<String>,
    pub container: Option<String>,
    pub restarts: Option<u32>,
    /// The status says `CrashLoopBackOff` (not only a restart count).
    pub backing_off: bool,
    /// A `BackOff` event: the kubelet is delaying restarts.
    pub backoff_event: bool,
}

impl Payload for CrashLoop {
    const SPEC: KindSpec = KindSpec {
        name: "crash-loop",
        role: Role::Symptom,
        verified_when: "never: a crash loop shows that a container dies, not why",
        accounts_for: &[Symptom::Restarts, Symptom::Unavailable, Symptom::Errors],
    };

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            container: Some("api".into()),
            restarts: Some(5),
            backing_off: true,
            backoff_event: true,
        }
    }

    fn title(&self) -> String {
        format!(
            "{} crash-looping (CrashLoopBackOff)",
            container_label(self.container.as_deref())
        )
    }

    fn detail(&self) -> String {
        let mut detail = format!(
            "{}{} is crash-looping",
            container_label(self.container.as_deref()),
            in_pod(self.pod.as_deref())
        );
        if self.backing_off {
            detail.push_str(" (CrashLoopBackOff)");
        }
        if let Some(n) = self.restarts.filter(|n| *n > 0) {
            detail.push_str(&format!("; restarted {n} times"));
        }
        if self.backoff_event {
            detail.push_str("; the kubelet is backing off restarts");
        }
        detail.push('.');
        detail
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn step(&self, scene: &Scene) -> String {
        format!(
            "Read the crashed container's whole log: `{}`.",
            scene.previous_log_command(self.pod.as_deref(), self.container.as_deref())
        )
    }

    /// The Service it is one of the unready pods of.
    fn explains(&self, effect: &Finding) -> bool {
        matches!(&effect.fact, Fact::NoEndpoints(e)
            if self.pod.as_deref().is_some_and(|pod| e.not_ready_pods.iter().any(|n| n == pod)))
    }
}

/// Whether a failure a pod's own log or status shows (a missing setting, a refused dependency,
/// an expired certificate, a full disk, the line it crashed on) explains `effect`: that pod's
/// exits nothing else explains, its crash loop, restarts, crash line and failing probes, and
/// the Job it runs for. Both sides must name the pod: an unnamed one explains nothing, or one
/// failure would explain every other in the round.
pub fn pod_failure_explains(pod: Option<&str>, effect: &Finding) -> bool {
    let same = |other: &Option<String>| same_pod(pod, other.as_deref());
    match &effect.fact {
        Fact::Exited(e) => e.cause_unknown() && same(&e.pod),
        Fact::CrashLoop(c) => same(&c.pod),
        Fact::RestartTrend(r) => same(&r.pod),
        Fact::CrashLine(c) => same(&c.pod),
        Fact::ProbeFailure(p) => same(&p.pod),
        Fact::JobFailed(j) => pod_of_job(pod, j.job.as_deref()),
        _ => false,
    }
}

/// The same named pod and the same container, where both say which container (a pod's only
/// container often goes unnamed).
pub(super) fn same_container(
    pod_a: &Option<String>,
    container_a: &Option<String>,
    pod_b: &Option<String>,
    container_b: &Option<String>,
) -> bool {
    same_pod(pod_a.as_deref(), pod_b.as_deref())
        && match (container_a, container_b) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
}

/// Crash loops, exits and OOM kills in the round's structural evidence, then the crash line of
/// a container that crashed.
pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (evidence, ctx) in round.structural() {
        let lines: Vec<&str> = evidence.excerpt.lines().collect();
        let Some(scan) = Scan::new(evidence, &lines, ctx) else {
            continue;
        };
        out.extend(scan.crash_loop());
        out.extend(scan.terminations());
    }
    // A termination the runtime explained itself (a command not found) needs no log line.
    let explained: Vec<Option<String>> = out
        .iter()
        .filter(|f| f.kind() == Kind::Exited && f.verified)
        .map(Finding::resource)
        .collect();
    let crashed: Vec<Option<String>> = out
        .iter()
        .chain(round.found_of(Kind::JobFailed))
        .filter(|f| matches!(f.kind(), Kind::CrashLoop | Kind::JobFailed | Kind::Exited))
        .map(Finding::resource)
        .filter(|pod| {
            !explained
                .iter()
                .any(|e| super::same_resource(e.as_deref(), pod.as_deref()))
        })
        .collect();
    let signalled: Vec<Option<String>> = out
        .iter()
        .filter_map(|f| match &f.fact {
            Fact::Exited(e) if e.signalled() => Some(e.pod.clone()),
            _ => None,
        })
        .collect();
    if !crashed.is_empty() {
        out.extend(crash_line(round, &crashed, &signalled));
    }
    out
}

/// One structural evidence item, as lines: for a `kubectl get` table only the rows about the
/// alert's object, so a neighbour's CrashLoopBackOff is not reported as the target's.
pub(super) struct Scan<'a> {
    evidence: &'a Evidence,
    lines: Vec<&'a str>,
    pod: Option<String>,
    /// The node a description places the pod on (`Node: worker-3/10.0.1.23`).
    node: Option<String>,
}

impl<'a> Scan<'a> {
    pub(super) fn new(
        evidence: &'a Evidence,
        lines: &[&'a str],
        ctx: &DetectionContext,
    ) -> Option<Self> {
        let mut pod = object_name(evidence).or_else(|| ctx.default_resource.clone());
        let lines = if is_table(lines) {
            let rows = table_rows_about(lines, ctx.default_resource.as_deref());
            if rows.len() <= 1 {
                return None;
            }
            if rows.len() == 2 {
                pod = rows[1].split_whitespace().next().map(str::to_string);
            }
            rows
        } else {
            lines.to_vec()
        };
        let node = lines
            .iter()
            .find_map(|l| field_value(l, "node"))
            .and_then(|v| v.split('/').next())
            .filter(|n| !n.is_empty() && *n != "<none>")
            .map(str::to_string);
        Some(Self {
            evidence,
            lines,
            pod,
            node,
        })
    }

    fn crash_loop(&self) -> Option<Finding> {
        let reason = matching_line(&self.lines, &CRASH_LOOP);
        let backoff = matching_line(&self.lines, &BACKOFF_RESTART);
        let restarts = self
            .lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                field_value(l, "restartcount")
                    .and_then(|v| v.parse::<u32>().ok())
                    .map(|n| (i, n))
            })
            .max_by_key(|(_, n)| *n);
        let many_restarts = restarts.filter(|(_, n)| *n >= 3);
        if reason.is_none() && backoff.is_none() && many_restarts.is_none() {
            return None;
        }
        let container = reason
            .and_then(|i| container_for_line(&self.lines, i))
            .or_else(|| {
                backoff.and_then(|i| {
                    BACKOFF_RESTART
                        .captures(self.lines[i])
                        .and_then(|c| c.get(1).map(|m| m.as_str().to_string()))
                })
            })
            .or_else(|| restarts.and_then(|(i, _)| container_for_line(&self.lines, i)));
        let mut finding = Finding::new(
            CrashLoop {
                pod: self.pod.clone(),
                container,
                restarts: restarts.map(|(_, n)| n),
                backing_off: reason.is_some(),
                backoff_event: backoff.is_some(),
            },
            Confidence::High,
            false,
        );
        for index in [reason, backoff, many_restarts.map(|(i, _)| i)]
            .into_iter()
            .flatten()
        {
            let line = self.lines[index];
            let quote = match BACKOFF_RESTART.find(line) {
                Some(m) => quote_from(line, m.start()),
                None => quote_line(line),
            };
            finding.refs.push(cite(self.evidence, quote));
        }
        Some(finding)
    }

    /// OOM kills and other non-zero exits, from `Exit Code:` / `exitCode:` lines and the
    /// `Reason` / `Message` fields of the same termination.
    fn terminations(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        let mut seen_containers: Vec<Option<String>> = Vec::new();
        for (index, line) in self.lines.iter().enumerate() {
            let Some(code) = field_value(line, "exitcode").and_then(|v| v.parse::<i32>().ok())
            else {
                continue;
            };
            if code == 0 {
                continue;
            }
            let container = container_for_line(&self.lines, index);
            if seen_containers.contains(&container) {
                continue;
            }
            seen_containers.push(container.clone());
            let reason = self.sibling_field(index, "reason");
            let message = self.sibling_field(index, "message");
            let finished_at = self
                .sibling_field(index, "finishedat")
                .or_else(|| self.sibling_field(index, "finished"))
                .and_then(|(_, v)| {
                    let v = v.trim_matches('"');
                    DateTime::parse_from_rfc3339(v)
                        .or_else(|_| DateTime::parse_from_rfc2822(v))
                        .ok()
                })
                .map(|t| t.with_timezone(&Utc));
            let reason_text = reason.map(|(_, v)| v);
            let oom = reason_text == Some("OOMKilled")
                || (code == 137 && self.lines.iter().any(|l| OOM_EVENT.is_match(l)));
            if oom {
                let limit = self.memory_limit(container.as_deref());
                let mut finding = Finding::new(
                    OomKilled {
                        pod: self.pod.clone(),
                        container,
                        exit_code: Some(code),
                        limit: limit.map(|(_, l)| l.to_string()),
                    },
                    Confidence::High,
                    true,
                )
                .dated(finished_at);
                for index in [reason.map(|(i, _)| i), Some(index), limit.map(|(i, _)| i)]
                    .into_iter()
                    .flatten()
                {
                    finding
                        .refs
                        .push(cite(self.evidence, quote_line(self.lines[index])));
                }
                out.push(finding);
                continue;
            }
            let lost = reason_text == Some(CONTAINER_LOST);
            let usable_message = message
                .filter(|(_, m)| !m.is_empty() && !looks_like_injection(m))
                .filter(|_| !lost);
            let verified = usable_message.is_some();
            let mut finding = Finding::new(
                Exited {
                    pod: self.pod.clone(),
                    container,
                    code,
                    reason: reason_text.map(str::to_string),
                    message: usable_message.map(|(_, m)| m.to_string()),
                    finished_at,
                    node: self.node.clone(),
                },
                if verified {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
                verified,
            )
            .dated(finished_at);
            for index in [
                Some(index),
                reason.map(|(i, _)| i),
                usable_message.map(|(i, _)| i),
            ]
            .into_iter()
            .flatten()
            {
                finding
                    .refs
                    .push(cite(self.evidence, quote_line(self.lines[index])));
            }
            out.push(finding);
        }

        if out.iter().all(|f| f.kind() != Kind::OomKilled)
            && let Some(index) = self.lines.iter().position(|l| {
                OOM_EVENT.is_match(l) && !looks_like_injection(l) && !l.contains("--")
            })
        {
            let mut finding = Finding::new(
                OomKilled {
                    pod: self.pod.clone(),
                    container: None,
                    exit_code: None,
                    limit: None,
                },
                Confidence::High,
                true,
            );
            finding
                .refs
                .push(cite(self.evidence, quote_line(self.lines[index])));
            out.push(finding);
        }
        out
    }

    /// A field of the same termination as the line at `index`: same indentation, within a few
    /// lines, not past another state block. (Describe lists Reason above Exit Code; YAML sorts
    /// keys, so `reason` comes below `exitCode`.)
    fn sibling_field(&self, index: usize, key: &str) -> Option<(usize, &'a str)> {
        let indent = |l: &str| l.len() - l.trim_start().len();
        let own_indent = indent(self.lines[index]);
        let same_block = |i: usize| {
            let l = self.lines[i];
            !l.trim().is_empty() && indent(l) == own_indent
        };
        let below = (index + 1..self.lines.len().min(index + 8)).take_while(|&i| same_block(i));
        let above = (index.saturating_sub(7)..index)
            .rev()
            .take_while(|&i| same_block(i));
        above
            .chain(below)
            .find_map(|i| field_value(self.lines[i], key).map(|v| (i, v)))
    }

    /// The memory limit of a container: `Limits:` / `limits:` followed by `memory: …`.
    fn memory_limit(&self, container: Option<&str>) -> Option<(usize, &'a str)> {
        self.lines.iter().enumerate().find_map(|(i, l)| {
            let (key, value) = field(l)?;
            if key != "limits" || !value.is_empty() {
                return None;
            }
            if container.is_some() && container_for_line(&self.lines, i).as_deref() != container {
                return None;
            }
            (i + 1..self.lines.len().min(i + 4))
                .find_map(|j| field_value(self.lines[j], "memory").map(|v| (j, v)))
        })
    }
}

/// The line that best explains why a process died: a raised exception if there is one, a Go
/// panic / fatal line (or a line logged at fatal level), otherwise the last error-ish line —
/// preferring lines not logged below error level, so `INFO exiting with status 1` does not
/// hide the error before it. Tool errors and injection text are never chosen. Returns indices
/// among `lines`: (the line the log died on, the crash line) — the same, unless the first only
/// sums up a retried failure, whose line is then the crash line.
pub(super) fn crash_line_choice(lines: &[(usize, &str)]) -> Option<(usize, usize)> {
    let chosen = crash_line_candidate(lines)?;
    let crash = retried_failure(lines, chosen).unwrap_or_else(|| cascade_root(lines, chosen));
    Some((chosen, crash))
}

/// The most error lines one failure's cascade spans.
const CASCADE_LINES: usize = 6;

/// When the crash line ends a cascade — error lines logged in the same second, one right after
/// the other (`cannot execute pragma: database disk image is malformed`, then `could not open
/// database`, `input initialization failed`, `backend failed`) — the first of them is the
/// failure the others report on; each later one only says what gave up because of it.
fn cascade_root(lines: &[(usize, &str)], chosen: usize) -> usize {
    use super::text::{LogLevel, log_level};
    let error = |l: &str| log_level(l).is_some_and(|level| level >= LogLevel::Error);
    let second = |l: &str| SECOND.find(l).map(|m| m.as_str().to_string());
    let (_, last) = lines[chosen];
    let Some(at) = second(last).filter(|_| error(last)) else {
        return chosen;
    };
    let mut root = chosen;
    while root > 0 && chosen - root < CASCADE_LINES - 1 {
        let (_, before) = lines[root - 1];
        if !error(before) || second(before).as_deref() != Some(at.as_str()) {
            break;
        }
        root -= 1;
    }
    root
}

/// When the crash line only sums up a retried failure (`batch 88 failed after 3 retries`,
/// `giving up`), the failure that was retried says why: the last warning or error before it
/// with a status or a failure class (`HTTP 429 …`), whatever the lines around it repeat.
fn retried_failure(lines: &[(usize, &str)], summary: usize) -> Option<usize> {
    use super::text::{LogLevel, log_level};
    if !RETRY_SUMMARY.is_match(lines[summary].1) {
        return None;
    }
    lines[summary.saturating_sub(RETRY_LOOKBACK)..summary]
        .iter()
        .rposition(|(_, l)| {
            log_level(l).is_none_or(|level| level >= LogLevel::Warn) && RETRIED_FAILURE.is_match(l)
        })
        .map(|i| i + summary.saturating_sub(RETRY_LOOKBACK))
}

/// The crash line before a retried failure is looked for behind it.
fn crash_line_candidate(lines: &[(usize, &str)]) -> Option<usize> {
    use super::text::{LogLevel, log_level};
    let says_something = |l: &str| !ONLY_EXITS.is_match(&message_of(l));
    let error_level = |l: &str| !below_error_level(l) && CRASH_LINE.is_match(l);
    // Errors logged once the process began to stop are its teardown, not its reason.
    let teardown = lines
        .iter()
        .position(|(_, l)| TEARDOWN.is_match(l))
        .filter(|&t| lines[..t].iter().any(|(_, l)| error_level(l)))
        .unwrap_or(lines.len());
    // A raised exception names what failed more precisely than the summary logged after it
    // (`botocore…ClientError: … AccessDenied …` before `CRITICAL export failed; aborting`).
    let exception = lines[..teardown]
        .iter()
        .rposition(|(_, l)| EXCEPTION_LINE.is_match(l));
    // A Python traceback ends with the exception whatever its class is called
    // (`psycopg.errors.UniqueViolation: duplicate key …`).
    let traceback_end = lines[..teardown]
        .iter()
        .rposition(|(_, l)| l.contains("Traceback (most recent call last)"))
        .and_then(|start| (start + 1..teardown).find(|&i| PYTHON_RAISED.is_match(lines[i].1)));
    exception
        .max(traceback_end)
        .or_else(|| {
            lines.iter().position(|(_, l)| {
                (STRONG_CRASH_LINE.is_match(l) || log_level(l) == Some(LogLevel::Fatal))
                    && says_something(l)
            })
        })
        .or_else(|| {
            lines[..teardown]
                .iter()
                .rposition(|(_, l)| error_level(l) && says_something(l))
        })
        .or_else(|| {
            lines
                .iter()
                .rposition(|(_, l)| error_level(l) && says_something(l))
        })
        .or_else(|| lines.iter().rposition(|(_, l)| CRASH_LINE.is_match(l)))
}

/// The node a pod the round describes runs on.
fn node_of(round: &Round<'_>, pod: Option<&str>) -> Option<String> {
    let pod = pod?;
    round.pods().into_iter().find_map(|(_, object)| {
        (kube::str_at(object, "/metadata/name") == Some(pod))
            .then(|| kube::str_at(object, "/spec/nodeName").map(str::to_string))
            .flatten()
    })
}

/// The crash line of the first log (the previous container's first, then the current) of a
/// pod that crashed.
fn crash_line(
    round: &Round<'_>,
    crashed: &[Option<String>],
    signalled: &[Option<String>],
) -> Option<Finding> {
    let logs_in_order = round.of(Capability::PodLogsPrevious).chain(
        round
            .evidence
            .iter()
            .filter(|e| is_application_log(e) && e.capability != Capability::PodLogsPrevious),
    );
    for log in logs_in_order {
        let scan = LogScan::new(log, round);
        let relevant = crashed
            .iter()
            .any(|r| super::same_resource(r.as_deref(), scan.pod.as_deref()));
        if !relevant {
            continue;
        }
        let Some((candidate, at)) = crash_line_choice(&scan.lines) else {
            continue;
        };
        let (_, line) = scan.lines[at];
        // A warning retried until the process gave up at error level is why it died.
        let error_level = !below_error_level(line)
            || (at != candidate && !below_error_level(scan.lines[candidate].1));
        // The line after a banner, or an indented continuation, says what is wrong; in a
        // structured line whose message spans lines, its last error line does.
        let deciding = scan
            .lines
            .get(at + 1)
            .map(|(_, next)| *next)
            .filter(|next| {
                !next.trim().is_empty()
                    && (BANNER.is_match(line) || next.starts_with(char::is_whitespace))
            });
        let within = deciding
            .is_none()
            .then(|| embedded_reason(line))
            .flatten()
            .map(|start| quote_from(line, start));
        let from_previous = log.capability == Capability::PodLogsPrevious;
        let container = log
            .string_arg(&["container", "container_name"])
            .map(str::to_string);
        let mut refs = vec![cite(log, quote_line(line))];
        if let Some(deciding) = deciding {
            refs.push(cite(log, quote_line(deciding)));
        }
        if let Some(within) = &within {
            refs.push(cite(log, within.clone()));
        }
        let after_signal = signalled
            .iter()
            .any(|p| super::same_resource(p.as_deref(), scan.pod.as_deref()));
        let node_setting = [deciding, within.as_deref(), Some(line)]
            .into_iter()
            .flatten()
            .find_map(|l| SYSCTL.captures(l))
            .map(|c| NodeSetting {
                key: c[1].to_string(),
                node: node_of(round, scan.pod.as_deref()),
            });
        return Some(
            Finding::new(
                CrashLine {
                    pod: scan.pod.clone(),
                    container,
                    line: quote_line(line),
                    deciding_within: within.is_some(),
                    deciding: deciding.map(quote_line).or(within),
                    from_previous,
                    after_signal,
                    node_setting,
                },
                if from_previous {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
                // A line the process logged below error level is, by its own account, not why
                // it died — unless the error it gave up with sums it up.
                error_level,
            )
            .citing(refs),
        );
    }
    None
}

#[cfg(test)]
mod tests;
