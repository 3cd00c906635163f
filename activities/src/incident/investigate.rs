//! The `investigate` node: the fixed first-level steps (DESIGN §1 steps 3–5 and the alert's own
//! metric), each tool result turned into evidence `E1…`, then the deterministic detectors.
//!
//! The steps, in this order, each from what the alert names:
//!
//! 1. describe the pod;
//! 2. the *previous* container's log, when the pod restarted (restart count > 0, last state
//!    terminated, or CrashLoopBackOff in the description), or when the description could not
//!    be read (then nobody knows, and the previous log is the one that explains a crash);
//! 3. the current container's log;
//! 4. events for the pod (else the workload);
//! 5. the workload's deploy history;
//! 6. the alert's own expression as a range query over the alert window.
//!
//! A step whose target the alert does not name is skipped and recorded as missing with the
//! reason; pods are never guessed from a deployment or service name. Evidence ids are assigned
//! in call order, so the same alert against the same world yields the same ids.
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
        None => {
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
    };

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

    // 5. Deploy history of the workload.
    match (&namespace, &target.workload) {
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
