//! Whether a finding still stands: time and routine are part of every finding.
//!
//! - **Superseded by time**: evidence older than the state it describes is history. A
//!   FailedScheduling event about a pod that has since been scheduled and runs; a termination
//!   (an exit, an OOM kill) that ended hours before the alert while the container has run since;
//!   restart counts of a container that has recovered.
//! - **Routine**: a pattern every healthy cluster shows ([`Routine`]): the kubelet's start-up
//!   warning about `kube-root-ca.crt`, a sandbox that failed once while a pod started,
//!   `DNSConfigForming`, one probe failure while a container was starting.
//!
//! Such a finding stays in the report as context, never as a cause ([`super::Finding::role`]).

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::{Fact, Finding, Kind, Round, Routine, Standing};
use crate::kube;

/// A termination that ended this long before the alert, with the container running since, is
/// history rather than the alert's story.
const TERMINATION_HISTORY: Duration = Duration::hours(1);
/// A probe failure this soon after its container started is the container starting.
const STARTUP_GRACE: Duration = Duration::minutes(3);

/// The routine class `finding` belongs to, if it is routine.
fn routine_class(finding: &Finding, pods: &[PodState]) -> Option<Routine> {
    // A pod the round shows stuck before starting may really wait for that volume.
    let stuck = |pod: Option<&str>| {
        pods.iter()
            .any(|p| Some(p.name.as_str()) == pod && p.pending)
    };
    match &finding.fact {
        Fact::ConfigError(c) => match &c.problem {
            super::config::ConfigProblem::Mount { volume, says }
                if is_kube_root_ca(volume.as_deref(), says) && !stuck(c.pod.as_deref()) =>
            {
                Some(Routine::KubeRootCaNotRegistered)
            }
            _ => None,
        },
        Fact::WarningEvent(w) => {
            let message = w.message.as_deref().unwrap_or_default();
            match w.reason.as_str() {
                "FailedMount" if is_kube_root_ca(None, message) && !stuck(w.object.as_deref()) => {
                    Some(Routine::KubeRootCaNotRegistered)
                }
                "DNSConfigForming" => Some(Routine::DnsConfigForming),
                "FailedCreatePodSandBox" | "SandboxChanged"
                    if w.object
                        .as_deref()
                        .is_some_and(|o| pods.iter().any(|p| p.name == o && p.running)) =>
                {
                    Some(Routine::SandboxAtStartup)
                }
                _ => None,
            }
        }
        Fact::ProbeFailure(p) => {
            let at = finding.at?;
            let pod = pods
                .iter()
                .find(|s| Some(s.name.as_str()) == p.pod.as_deref())?;
            let once = p.count.is_none_or(|n| n <= 1);
            let while_starting = pod.started.is_some_and(|started| {
                at >= started - Duration::seconds(5) && at - started <= STARTUP_GRACE
            });
            (once && while_starting && pod.ready).then_some(Routine::ProbeAtStartup)
        }
        _ => None,
    }
}

/// The kubelet's projected service-account volume (`kube-api-access-…`) or the namespace's
/// CA bundle (`kube-root-ca.crt`) "not registered".
fn is_kube_root_ca(volume: Option<&str>, says: &str) -> bool {
    let about_ca = says.contains("kube-root-ca.crt")
        || volume.is_some_and(|v| v.starts_with("kube-api-access-"));
    about_ca && says.contains("not registered")
}

/// What the round's evidence says a pod is doing now.
#[derive(Debug, Clone, PartialEq)]
struct PodState {
    name: String,
    /// Scheduled and running.
    running: bool,
    /// Not yet started (phase Pending): a volume it waits for may be why.
    pending: bool,
    ready: bool,
    node: Option<String>,
    /// When its (latest-started) container started running.
    started: Option<DateTime<Utc>>,
    /// When a container of it last started, running now or finished since.
    ran: Option<DateTime<Utc>>,
    /// When it last became ready, when its Ready condition is True and says.
    ready_since: Option<DateTime<Utc>>,
}

/// The pods the round's structured evidence describes.
fn pod_states(round: &Round<'_>) -> Vec<PodState> {
    // A pod list's items too, each alone (an excerpt keeps every item's identity).
    let listed = round
        .items()
        .iter()
        .filter(|(e, ..)| e.capability == crate::evidence::Capability::PodList)
        .map(|(_, _, object)| object);
    let mut states: Vec<PodState> = Vec::new();
    for state in round
        .pods()
        .into_iter()
        .map(|(_, pod)| pod)
        .chain(listed)
        .filter_map(pod_state)
    {
        if !states.iter().any(|s| s.name == state.name) {
            states.push(state);
        }
    }
    states
}

/// What one pod object says it is doing.
fn pod_state(pod: &Value) -> Option<PodState> {
    let name = kube::str_at(pod, "/metadata/name")?.to_string();
    pod.pointer("/status")?;
    let statuses: Vec<&Value> = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let started = statuses
        .iter()
        .filter_map(|s| kube::str_at(s, "/state/running/startedAt"))
        .filter_map(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
        .max();
    let phase = kube::str_at(pod, "/status/phase");
    // A container that ran to its end (a Job's pod) was scheduled as surely as a
    // running one.
    let finished_at = statuses
        .iter()
        .filter_map(|s| kube::str_at(s, "/state/terminated/startedAt"))
        .filter_map(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
        .max();
    Some(PodState {
        ran: started.or(finished_at),
        running: phase == Some("Running"),
        pending: kube::str_at(pod, "/status/phase") == Some("Pending"),
        ready: !statuses.is_empty()
            && statuses
                .iter()
                .all(|s| s.get("ready").and_then(Value::as_bool) == Some(true)),
        node: kube::str_at(pod, "/spec/nodeName").map(str::to_string),
        started,
        ready_since: kube::conditions_of(pod)
            .into_iter()
            .find(|c| c.kind == "Ready" && c.status == "True")
            .and_then(|c| c.since)
            .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| t.with_timezone(&Utc)),
        name,
    })
}

/// Why `finding` is superseded by later evidence, if it is.
fn superseded(
    finding: &Finding,
    round: &Round<'_>,
    pods: &[PodState],
    recovered: &[Option<String>],
) -> Option<String> {
    let pod_named = |name: Option<&str>| pods.iter().find(|p| Some(p.name.as_str()) == name);
    // An object the round shows exists now: a report that it was missing is history.
    let exists = |kind: &str, name: &str| {
        round.parsed_objects().iter().any(|(_, o)| {
            kube::str_at(o, "/kind").is_some_and(|k| k.eq_ignore_ascii_case(kind))
                && kube::str_at(o, "/metadata/name") == Some(name)
        })
    };
    let alert = round.ctx.alert_start;
    if let Some(job) = completed_job(finding, round) {
        return Some(format!(
            "Job `{job}` completed since: a later attempt succeeded"
        ));
    }
    match &finding.fact {
        Fact::ConfigError(c)
            if matches!(c.problem, super::config::ConfigProblem::Mount { .. })
                && routine_class(finding, pods).is_none() =>
        {
            // Containers start only once every volume is mounted: a pod running now has
            // mounted them since the failure.
            let pod = pod_named(c.pod.as_deref())?;
            let started = pod.started?;
            (pod.running && finding.at.is_none_or(|at| at <= started)).then(|| {
                format!(
                    "the volumes mounted since: `{}` has run since {} UTC",
                    pod.name,
                    started.format("%H:%M")
                )
            })
        }
        Fact::ProbeFailure(p) if p.probe == super::probes::Probe::Readiness => {
            // Failures from before the pod became ready: it passes its probe now.
            let pod = pod_named(p.pod.as_deref())?;
            let ready_since = pod.ready_since?;
            (pod.running && pod.ready && finding.at.is_none_or(|at| at <= ready_since)).then(|| {
                format!(
                    "`{}` has been ready since {} UTC",
                    pod.name,
                    ready_since.format("%H:%M")
                )
            })
        }
        Fact::ConfigError(c) => match &c.problem {
            super::config::ConfigProblem::MissingObject { object_kind, name }
                if exists(object_kind, name) =>
            {
                Some(format!("{object_kind} `{name}` exists now"))
            }
            _ => None,
        },
        Fact::ProvisioningFailed(p) => p
            .missing_class
            .as_deref()
            .filter(|class| exists("StorageClass", class))
            .map(|class| format!("StorageClass `{class}` exists now")),
        Fact::Unschedulable(u) => {
            let pod = pod_named(u.pod.as_deref())?;
            let at = finding.at;
            let started = if pod.running { pod.started } else { pod.ran };
            let before_start = match (at, started) {
                (Some(at), Some(started)) => at <= started,
                _ => true,
            };
            let ran = pod.running || pod.ran.is_some();
            (ran && pod.node.is_some() && before_start).then(|| {
                format!(
                    "`{}` has since been scheduled{} and {}",
                    pod.name,
                    pod.node
                        .as_deref()
                        .map(|n| format!(" on `{n}`"))
                        .unwrap_or_default(),
                    if pod.running { "runs" } else { "ran" }
                )
            })
        }
        Fact::Exited(_) | Fact::OomKilled(_) | Fact::CrashLine(_) => {
            let pod_name = match &finding.fact {
                Fact::Exited(e) => e.pod.as_deref(),
                Fact::OomKilled(o) => o.pod.as_deref(),
                Fact::CrashLine(c) => c.pod.as_deref(),
                _ => None,
            };
            let ended = finding.at?;
            let alert = alert?;
            let pod = pod_named(pod_name)?;
            let running_since = pod.started?;
            (ended < alert - TERMINATION_HISTORY && pod.running && running_since >= ended).then(
                || {
                    format!(
                        "it ended at {} UTC, {} before the alert, and the container has run since",
                        ended.format("%m-%d %H:%M"),
                        ago(alert - ended)
                    )
                },
            )
        }
        Fact::CrashLoop(c) => {
            // A crash loop read only off a restart count is history when the container has
            // since run cleanly: the recovery is the news, the old restarts are not a loop.
            let only_counts = !c.backing_off && !c.backoff_event;
            let recovered = recovered
                .iter()
                .any(|r| super::same_pod(r.as_deref(), c.pod.as_deref()));
            (only_counts && recovered)
                .then(|| "the container has run cleanly since its last restart".to_string())
        }
        _ => None,
    }
}

/// The Job a failure's pod belongs to, when the round shows that Job Complete: the failed
/// attempt was retried and the retry succeeded.
fn completed_job(finding: &Finding, round: &Round<'_>) -> Option<String> {
    let pod = match &finding.fact {
        Fact::Exited(e) => e.pod.as_deref(),
        Fact::OomKilled(o) => o.pod.as_deref(),
        Fact::CrashLine(c) => c.pod.as_deref(),
        Fact::CrashLoop(c) => c.pod.as_deref(),
        Fact::Dependency(d) => d.pod.as_deref(),
        Fact::Refusal(r) => r.pod.as_deref(),
        Fact::ErrorLine(e) => e.pod.as_deref(),
        _ => None,
    }?;
    round.parsed_objects().iter().find_map(|(_, o)| {
        let name = kube::str_at(o, "/metadata/name")?;
        let complete = kube::str_at(o, "/kind") == Some("Job")
            && super::pod_of_job(Some(pod), Some(name))
            && kube::conditions_of(o)
                .iter()
                .any(|c| c.kind == "Complete" && c.status == "True");
        complete.then(|| name.to_string())
    })
}

/// `3 days`, `7 h`.
fn ago(d: Duration) -> String {
    if d.num_hours() >= 48 {
        format!("{} days", d.num_days())
    } else {
        format!("{} h", d.num_hours())
    }
}

/// Decides every finding's standing from the round's evidence.
pub(super) fn decide(findings: &mut [Finding], round: &Round<'_>) {
    let pods = pod_states(round);
    let recovered: Vec<Option<String>> = findings
        .iter()
        .filter(|f| f.kind() == Kind::Recovered)
        .map(Finding::resource)
        .collect();
    for finding in findings.iter_mut() {
        if finding.standing != Standing::Current {
            continue;
        }
        if let Some(because) = superseded(finding, round, &pods, &recovered) {
            finding.standing = Standing::Superseded { because };
        } else if let Some(class) = routine_class(finding, &pods) {
            finding.standing = Standing::Routine { class };
        }
    }
}

#[cfg(test)]
mod tests;
