//! The `investigate` node: the fixed first-level steps (DESIGN §1 steps 3–5 and the alert's own
//! metric), each tool result turned into evidence `E1…`, then the deterministic detectors.
//!
//! The steps, in this order, each from what the alert names:
//!
//! 1. describe the pod; when the alert is about a Kubernetes Job, describe the Job and, when no
//!    pod is named, list its pods (`job-name=<job>`) and read the current log and the events of
//!    at most [`MAX_JOB_PODS`] failed ones, newest first;
//! 2. the *previous* container's log, when the pod restarted (restart count > 0, last state
//!    terminated, or CrashLoopBackOff in the description), or when the description could not
//!    be read (then nobody knows, and the previous log is the one that explains a crash);
//! 3. the current container's log;
//! 4. events for the pod (else the workload);
//! 5. the workload's deploy history (not for a Job or CronJob, which have none);
//! 6. the alert's own expression as a range query over the alert window.
//!
//! A step whose target the alert does not name is skipped and recorded as missing with the
//! reason; pods are never guessed from a deployment or service name (a Job's pods are found by
//! its `job-name` label). Evidence ids are assigned in call order, so the same alert against the
//! same world yields the same ids.
//!
//! Model seam: when a model is configured, a bounded ReAct leaf over the allowlisted tools runs
//! after the fixed steps, appending its own evidence through the same [`Collector`]; the fixed
//! steps and detectors stay as they are.

use std::time::Duration;

use tracing::Instrument;

use crate::alert::AlertTarget;
use crate::detectors::text::field;
use crate::detectors::{DetectionContext, run_detectors};
use crate::evidence::{Capability, Evidence, EvidenceId};
use crate::excerpt::{ExcerptLimits, RoundBudget};
use crate::redact::redact;
use crate::tools::{CapabilityRequest, EvidenceSource, Fetched};

use super::state::{IncidentState, IncidentUpdate, Missing, Usage};

/// Bounds of the fixed steps.
#[derive(Debug, Clone, PartialEq)]
pub struct InvestigateOptions {
    /// Excerpt sizes: per item and per round (DESIGN §6: 3,500 / 40,000 characters).
    pub limits: ExcerptLimits,
    /// Lines requested from the end of a container log.
    pub tail_lines: u32,
    /// Longest wait for one evidence request; a request still running then is missing
    /// evidence, not a failed round. The tool layer has its own per-call timeout too.
    pub fetch_timeout: Duration,
    /// The alert window starts this long before the alert's start.
    pub window_before: chrono::Duration,
    /// … and ends this long after it.
    pub window_after: chrono::Duration,
    /// Resolution of the metric range query.
    pub metric_step_secs: u32,
}

impl Default for InvestigateOptions {
    fn default() -> Self {
        Self {
            limits: ExcerptLimits::default(),
            tail_lines: 300,
            fetch_timeout: Duration::from_secs(20),
            window_before: chrono::Duration::minutes(30),
            window_after: chrono::Duration::minutes(15),
            metric_step_secs: 60,
        }
    }
}

/// Runs the fixed steps against `source` and the detectors over what they returned.
pub async fn investigate<E: EvidenceSource>(
    source: &E,
    state: &IncidentState,
    options: &InvestigateOptions,
) -> IncidentUpdate {
    let target = &state.alert.target;
    let span = tracing::info_span!(
        "incident.investigate",
        alertname = target.alertname.as_deref().unwrap_or(""),
        namespace = target.namespace.as_deref().unwrap_or(""),
        pod = target.pod.as_deref().unwrap_or(""),
        evidence = tracing::field::Empty,
        missing = tracing::field::Empty,
        findings = tracing::field::Empty,
    );
    async {
        let first_id = u32::try_from(state.evidence.len())
            .unwrap_or(u32::MAX - 1)
            .saturating_add(1);
        let mut steps = Collector::new(source, options, first_id);
        fixed_steps(&mut steps, state, options).await;

        let mut ctx = DetectionContext::for_alert(target);
        ctx.alert_start = state.alert.anchor();
        let findings = run_detectors(&steps.evidence, &ctx);

        let current = tracing::Span::current();
        current.record("evidence", steps.evidence.len());
        current.record("missing", steps.missing.len());
        current.record("findings", findings.len());
        IncidentUpdate::default()
            .evidence(steps.evidence)
            .missing(steps.missing)
            .findings(findings)
            .usage(Usage {
                tool_calls: steps.calls,
                ..Usage::default()
            })
    }
    .instrument(span)
    .await
}

async fn fixed_steps<E: EvidenceSource>(
    steps: &mut Collector<'_, E>,
    state: &IncidentState,
    options: &InvestigateOptions,
) {
    let target = &state.alert.target;
    let namespace = target.namespace.clone();

    // 1. Describe the pod.
    let pod = match (&namespace, &target.pod) {
        (Some(ns), Some(pod)) => Some((ns.clone(), pod.clone())),
        _ => None,
    };
    let restarted = match &pod {
        Some((namespace, pod)) => {
            let described = steps
                .fetch(CapabilityRequest::PodDescribe {
                    namespace: namespace.clone(),
                    pod: pod.clone(),
                })
                .await;
            // Unknown restart state (no description) counts as "maybe": the previous log is
            // the one that explains a crash, so it is worth one call.
            described.as_deref().is_none_or(restart_signal)
        }
        None => match (&namespace, job_name(target)) {
            // A Job's pods are discovered below; their current logs are read there.
            (Some(_), Some(job)) => {
                steps.skip(
                    Capability::PodDescribe,
                    format!(
                        "the alert names job `{job}` but no pod; the job was described and its \
                         pods listed instead"
                    ),
                );
                steps.skip(
                    Capability::PodLogsPrevious,
                    format!(
                        "a failed pod of job `{job}` is replaced, not restarted in place; the \
                         current logs of its failed pods were read instead"
                    ),
                );
                false
            }
            _ => {
                let reason = no_pod_reason(target);
                for capability in [
                    Capability::PodDescribe,
                    Capability::PodLogsPrevious,
                    Capability::PodLogsCurrent,
                ] {
                    steps.skip(capability, reason.clone());
                }
                false
            }
        },
    };

    // 1b. A Job: describe it, then find its failed pods (newest first) and read their current
    // logs and events. A Job's failed pod is usually not restarted in place, so its *current*
    // log is the crash log.
    if let (Some(ns), Some(job)) = (&namespace, job_name(target)) {
        steps
            .fetch(CapabilityRequest::WorkloadDescribe {
                namespace: ns.clone(),
                kind: "Job".to_string(),
                name: job.to_string(),
            })
            .await;
        if pod.is_none() {
            job_pod_steps(steps, ns, job, target.container.clone(), options).await;
        }
    }

    // 2–3. The previous container's log when it restarted, then the current one.
    if let Some((namespace, pod)) = &pod {
        let logs = |previous| CapabilityRequest::PodLogs {
            namespace: namespace.clone(),
            pod: pod.clone(),
            container: target.container.clone(),
            previous,
            tail_lines: options.tail_lines,
        };
        if restarted {
            steps.fetch(logs(true)).await;
        }
        steps.fetch(logs(false)).await;
    }

    // 4. Events for the pod, else for the workload.
    let object = target.pod.clone().or_else(|| target.workload.clone());
    match (&namespace, object) {
        (Some(ns), Some(object)) => {
            steps
                .fetch(CapabilityRequest::Events {
                    namespace: ns.clone(),
                    object: Some(object),
                })
                .await;
        }
        (None, _) => steps.skip(Capability::Events, no_namespace_reason(target)),
        (Some(_), None) => steps.skip(
            Capability::Events,
            "the alert names no pod or workload whose events to read",
        ),
    }

    // 5. Deploy history of the workload (a Job has no rollout history).
    match (&namespace, &target.workload) {
        (Some(_), Some(workload)) if is_batch_kind(target) => steps.skip(
            Capability::DeployHistory,
            format!(
                "`{workload}` is a {}, which has no rollout history",
                target.workload_kind.as_deref().unwrap_or("Job")
            ),
        ),
        (Some(ns), Some(workload)) => {
            steps
                .fetch(CapabilityRequest::DeployHistory {
                    namespace: ns.clone(),
                    workload: workload.clone(),
                })
                .await;
        }
        (None, _) => steps.skip(Capability::DeployHistory, no_namespace_reason(target)),
        (Some(_), None) => steps.skip(
            Capability::DeployHistory,
            match &target.service {
                Some(service) => format!(
                    "the alert names service `{service}` but no workload; the deployment behind \
                     it was not guessed"
                ),
                None => "the alert names no workload whose deploys to read".to_string(),
            },
        ),
    }

    // 6. The alert's own metric over the alert window.
    match (&target.expression, state.alert.anchor()) {
        (Some(query), Some(anchor)) => {
            steps
                .fetch(CapabilityRequest::MetricRange {
                    query: query.clone(),
                    start: anchor - options.window_before,
                    end: anchor + options.window_after,
                    step_secs: options.metric_step_secs,
                })
                .await;
        }
        (None, _) => steps.skip(
            Capability::MetricRange,
            "the alert message carries no expression to re-run",
        ),
        (Some(_), None) => steps.skip(
            Capability::MetricRange,
            "the alert has no start time, so there is no window to query",
        ),
    }
}

/// The most pods of one Job whose logs and events are read.
pub const MAX_JOB_PODS: usize = 2;

/// The Kubernetes Job the alert is about: its workload when that is a Job.
fn job_name(target: &AlertTarget) -> Option<&str> {
    target
        .workload_kind
        .as_deref()
        .is_some_and(|k| k.eq_ignore_ascii_case("job"))
        .then_some(target.workload.as_deref())
        .flatten()
        .filter(|name| !name.is_empty())
}

fn is_batch_kind(target: &AlertTarget) -> bool {
    target
        .workload_kind
        .as_deref()
        .is_some_and(|k| k.eq_ignore_ascii_case("job") || k.eq_ignore_ascii_case("cronjob"))
}

/// Lists the Job's pods, then reads the current log and the events of at most
/// [`MAX_JOB_PODS`] failed ones, newest first.
async fn job_pod_steps<E: EvidenceSource>(
    steps: &mut Collector<'_, E>,
    namespace: &str,
    job: &str,
    container: Option<String>,
    options: &InvestigateOptions,
) {
    let listed = steps
        .fetch(CapabilityRequest::PodList {
            namespace: namespace.to_string(),
            label_selector: format!("job-name={job}"),
        })
        .await;
    let Some(listed) = listed else {
        steps.skip(
            Capability::PodLogsCurrent,
            format!("the pods of job `{job}` could not be listed, so no container log was read"),
        );
        return;
    };
    let mut pods = failed_job_pods(&listed, job);
    if pods.is_empty() {
        steps.skip(
            Capability::PodLogsCurrent,
            format!("no failed pod of job `{job}` was found, so no container log was read"),
        );
        return;
    }
    if pods.len() > MAX_JOB_PODS {
        steps.skip(
            Capability::PodLogsCurrent,
            format!(
                "job `{job}` has {} failed pods; only the newest {MAX_JOB_PODS} were read",
                pods.len()
            ),
        );
        pods.truncate(MAX_JOB_PODS);
    }
    for pod in pods {
        steps
            .fetch(CapabilityRequest::PodLogs {
                namespace: namespace.to_string(),
                pod: pod.clone(),
                container: container.clone(),
                previous: false,
                tail_lines: options.tail_lines,
            })
            .await;
        steps
            .fetch(CapabilityRequest::Events {
                namespace: namespace.to_string(),
                object: Some(pod),
            })
            .await;
    }
}

/// The failed pods of `job` in a pod list, newest first (ties by name). Reads a `kubectl get
/// pods` table (with or without `--show-labels`) and kubernetes-mcp-server's YAML list. A pod
/// belongs to the job when its labels carry `job-name=<job>`, or, when no labels are shown, when
/// its name is `<job>-<suffix>`.
pub fn failed_job_pods(list: &str, job: &str) -> Vec<String> {
    let mut pods = if list
        .lines()
        .any(|l| l.split_whitespace().next() == Some("NAME"))
    {
        table_pods(list, job)
    } else {
        yaml_pods(list, job)
    };
    // Newest first: smallest age; then by name, so the order is deterministic.
    pods.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    pods.dedup_by(|a, b| a.0 == b.0);
    pods.into_iter().map(|(name, _)| name).collect()
}

/// A sort key: lower is newer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Age {
    /// Seconds since creation (a table's AGE).
    Secs(u64),
    /// Reverse creation time: `creationTimestamp` RFC 3339 text, inverted for sorting.
    Created(std::cmp::Reverse<String>),
    Unknown,
}

fn labels_name_job(labels: &str, job: &str) -> bool {
    labels.split(',').any(|label| {
        label.split_once('=').is_some_and(|(key, value)| {
            (key == "job-name" || key.ends_with("/job-name")) && value == job
        })
    })
}

fn looks_failed(status: &str) -> bool {
    !matches!(
        status,
        "Running"
            | "Completed"
            | "Succeeded"
            | "Pending"
            | "ContainerCreating"
            | "PodInitializing"
            | "Terminating"
            | ""
    )
}

fn parse_age(age: &str) -> Age {
    let mut total = 0u64;
    let mut number = String::new();
    for c in age.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3_600,
            'd' => 86_400,
            'y' => 31_536_000,
            _ => return Age::Unknown,
        };
        let Ok(n) = number.parse::<u64>() else {
            return Age::Unknown;
        };
        total = total.saturating_add(n.saturating_mul(unit));
        number.clear();
    }
    if number.is_empty() && total > 0 || age == "0s" {
        Age::Secs(total)
    } else {
        Age::Unknown
    }
}

fn table_pods(list: &str, job: &str) -> Vec<(String, Age)> {
    let mut lines = list
        .lines()
        .skip_while(|l| l.split_whitespace().next() != Some("NAME"));
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    // Column starts from the header (cells are left-aligned; some hold spaces, like
    // `56 (4h43m ago)` under RESTARTS).
    let mut columns: Vec<(&str, usize)> = Vec::new();
    let mut offset = 0;
    for word in header.split_whitespace() {
        let start = header[offset..].find(word).map_or(offset, |i| offset + i);
        columns.push((word, start));
        offset = start + word.len();
    }
    let cell = |row: &str, name: &str| -> Option<String> {
        let i = columns.iter().position(|(c, _)| *c == name)?;
        let start = columns[i].1;
        let end = columns.get(i + 1).map_or(row.len(), |c| c.1).min(row.len());
        row.get(start.min(end)..end).map(|s| s.trim().to_string())
    };
    let has_labels = columns.iter().any(|(c, _)| *c == "LABELS");
    let mut out = Vec::new();
    for row in lines.take(1000) {
        let Some(name) = row.split_whitespace().next() else {
            continue;
        };
        let member = if has_labels {
            cell(row, "LABELS").is_some_and(|labels| labels_name_job(&labels, job))
        } else {
            name.strip_prefix(job)
                .is_some_and(|rest| rest.starts_with('-'))
        };
        let status = cell(row, "STATUS").unwrap_or_default();
        if member && looks_failed(&status) {
            let age = cell(row, "AGE").map_or(Age::Unknown, |a| parse_age(&a));
            out.push((name.to_string(), age));
        }
    }
    out
}

fn yaml_pods(list: &str, job: &str) -> Vec<(String, Age)> {
    fn indent(line: &str) -> usize {
        line.len() - line.trim_start_matches([' ', '-']).len()
    }
    fn key_value(line: &str) -> Option<(&str, &str)> {
        let (key, value) = line.trim_start_matches([' ', '-']).split_once(':')?;
        Some((
            key.trim().trim_matches('"'),
            value.trim().trim_matches(['"', '\'']),
        ))
    }
    // Items start at the shallowest `- ` lines.
    let item_indent = list
        .lines()
        .filter(|l| l.trim_start().starts_with("- "))
        .map(|l| l.len() - l.trim_start().len())
        .min();
    let Some(item_indent) = item_indent else {
        return Vec::new();
    };
    let mut items: Vec<Vec<&str>> = Vec::new();
    for line in list.lines().take(20_000) {
        let starts_item = line.len() - line.trim_start().len() == item_indent
            && line.trim_start().starts_with("- ");
        if starts_item {
            items.push(Vec::new());
        }
        if let Some(item) = items.last_mut() {
            item.push(line);
        }
    }
    let mut out = Vec::new();
    for item in items {
        let mut name = None;
        let mut phase = "";
        let mut created = None;
        let mut member = false;
        let mut crashed = false;
        let mut metadata: Option<usize> = None;
        for line in &item {
            let Some((key, value)) = key_value(line) else {
                continue;
            };
            let depth = indent(line);
            if metadata.is_some_and(|m| depth <= m) {
                metadata = None;
            }
            match key {
                "metadata" => metadata = Some(depth),
                "name" if metadata.is_some() && name.is_none() && !value.is_empty() => {
                    name = Some(value.to_string());
                }
                "creationTimestamp" if created.is_none() => created = Some(value.to_string()),
                "phase" => phase = value,
                "job-name" | "batch.kubernetes.io/job-name" if value == job => member = true,
                "reason" if matches!(value, "Error" | "CrashLoopBackOff" | "OOMKilled") => {
                    crashed = true;
                }
                _ => {}
            }
        }
        let Some(name) = name else { continue };
        let member = member
            || name
                .strip_prefix(job)
                .is_some_and(|rest| rest.starts_with('-'));
        let failed = phase == "Failed" || (crashed && phase != "Succeeded");
        if member && failed {
            let age = created.map_or(Age::Unknown, |c| Age::Created(std::cmp::Reverse(c)));
            out.push((name, age));
        }
    }
    out
}

/// Makes evidence requests and keeps what they returned: ids in call order, excerpts within
/// the round budget, failures as missing evidence.
pub struct Collector<'a, E> {
    source: &'a E,
    fetch_timeout: Duration,
    budget: RoundBudget,
    next_id: u32,
    /// Evidence gathered so far.
    pub evidence: Vec<Evidence>,
    /// Missing evidence so far.
    pub missing: Vec<Missing>,
    /// Requests made.
    pub calls: u32,
}

impl<'a, E: EvidenceSource> Collector<'a, E> {
    /// A collector whose first evidence item will be `E<first_id>`.
    pub fn new(source: &'a E, options: &InvestigateOptions, first_id: u32) -> Self {
        Self {
            source,
            fetch_timeout: options.fetch_timeout,
            budget: RoundBudget::new(options.limits),
            next_id: first_id.max(1),
            evidence: Vec::new(),
            missing: Vec::new(),
            calls: 0,
        }
    }

    /// Makes one request. Returns the (redacted, not excerpted) text when the source answered.
    pub async fn fetch(&mut self, request: CapabilityRequest) -> Option<String> {
        let capability = request.capability();
        self.calls = self.calls.saturating_add(1);
        let fetched = tokio::time::timeout(self.fetch_timeout, self.source.fetch(request)).await;
        let output = match fetched {
            Ok(Fetched::Found(output)) => output,
            Ok(Fetched::Missing(missing)) => {
                tracing::debug!(capability = capability.label(), reason = %missing.reason, "evidence missing");
                self.missing.push(missing.into());
                return None;
            }
            Err(_) => {
                let reason = format!(
                    "no answer within {} s",
                    self.fetch_timeout.as_secs_f64().round()
                );
                self.missing.push(Missing::failed(capability, reason));
                return None;
            }
        };
        let text = redact(&output.text).text;
        let excerpt = self.budget.excerpt(&text);
        let Ok(id) = EvidenceId::new(self.next_id) else {
            return None;
        };
        self.next_id = self.next_id.saturating_add(1);
        tracing::debug!(%id, capability = output.capability.label(), server = %output.server, tool = %output.tool, cached = output.cached, "evidence");
        self.evidence.push(Evidence::new(
            id,
            output.capability,
            output.server,
            output.tool,
            output.args,
            excerpt,
            output.fetched_at,
        ));
        Some(text)
    }

    /// Records a step not taken.
    pub fn skip(&mut self, capability: Capability, reason: impl Into<String>) {
        self.missing.push(Missing::skipped(capability, reason));
    }
}

/// Whether a pod description shows a restart: restart count above zero, a terminated last
/// state, or CrashLoopBackOff. Reads `kubectl describe` text, YAML and JSON.
pub fn restart_signal(description: &str) -> bool {
    let lines: Vec<&str> = description.lines().collect();
    lines.iter().enumerate().any(|(i, line)| {
        if line.contains("CrashLoopBackOff") {
            return true;
        }
        match field(line) {
            Some((key, value)) if key == "restartcount" => value
                .trim_matches(|c: char| !c.is_ascii_digit())
                .parse::<u64>()
                .is_ok_and(|n| n > 0),
            Some((key, value)) if key == "laststate" => {
                value.to_ascii_lowercase().starts_with("terminated")
                    || lines[i + 1..]
                        .iter()
                        .find(|l| !l.trim().is_empty())
                        .and_then(|next| field(next))
                        .is_some_and(|(k, _)| k == "terminated")
            }
            _ => false,
        }
    })
}

fn no_pod_reason(target: &AlertTarget) -> String {
    match (
        &target.pod,
        &target.namespace,
        &target.workload,
        &target.service,
    ) {
        (Some(pod), None, _, _) => {
            format!("the alert names pod `{pod}` but no namespace, so it could not be looked up")
        }
        (None, _, Some(workload), _) => format!(
            "the alert names {} `{workload}` but no pod; its pods were not discovered, so none \
             was described and no container log was read",
            target
                .workload_kind
                .as_deref()
                .unwrap_or("workload")
                .to_ascii_lowercase()
        ),
        (None, _, None, Some(service)) => format!(
            "the alert names service `{service}` but no pod; the pods behind it were not \
             discovered, so none was described and no container log was read"
        ),
        _ => "the alert names no pod, workload or service".to_string(),
    }
}

fn no_namespace_reason(target: &AlertTarget) -> String {
    match target.subject() {
        Some(subject) => format!("the alert names `{subject}` but no namespace"),
        None => "the alert names no namespace".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_signal_reads_describe_yaml_and_json() {
        assert!(restart_signal("    Restart Count:  3\n"));
        assert!(!restart_signal(
            "    Restart Count:  0\n    State: Running\n"
        ));
        assert!(restart_signal("    Last State:     Terminated\n"));
        assert!(restart_signal(
            "    lastState:\n      terminated:\n        exitCode: 1\n"
        ));
        assert!(!restart_signal("    lastState: {}\n    restartCount: 0\n"));
        assert!(restart_signal("    \"restartCount\": 2,\n"));
        assert!(restart_signal("      reason: CrashLoopBackOff\n"));
    }
}
