//! The `investigate` node: the evidence plan over the Kubernetes object graph (steps 2–5 of the
//! seven in ARCHITECTURE.md), each tool result turned into evidence `E1…`, then the
//! deterministic detectors.
//!
//! - [`target`]: the objects the alert names, from every label kube-prometheus alerts carry, or
//!   resolved through the cluster when it names none;
//! - [`walk`]: from those objects to the pods that matter (a workload's by its selector, a
//!   Service's, a namespace's failing ones), their containers' logs and events, their nodes and
//!   claims, the namespace's warnings, the rollout history;
//! - [`telemetry`]: the alert's expression (or the catalogue's) over a trend window, resource
//!   metrics, Loki error lines and Tempo traces;
//! - [`collect`]: the [`Collector`] that sends the requests within the round's tool-call and
//!   time budgets and keeps the [`plan`] as it ran;
//! - [`kube`] and [`pods`]: reading what the tools say about objects and pods.
//!
//! Heartbeat alerts of the standard catalogue (`Watchdog`, `InfoInhibitor`) fire on purpose:
//! nothing is investigated, the report says what they are. Findings about objects the walk did
//! not reach from the alert (a neighbour's OOM in the namespace's warnings) are context: shown,
//! never confirmed as this alert's cause.
//!
//! With a model configured, `model_path` lets the model call the same tools after the round,
//! one step at a time, through a [`Collector`] holding what is left of this round's tool-call
//! budget.

mod anywhere;
mod clocks;
mod collect;
mod found;
pub mod leads;
mod outside;
mod pods;
mod stated;
pub mod target;
mod telemetry;

pub use telemetry::alert_expression;
pub mod walk;

use std::time::Duration;

use tracing::Instrument;

use crate::catalogue;
use crate::detectors::{
    AlertQuery, DetectionContext, Finding, Kind, Standing, Threshold, rank_findings, run_detectors,
};
use crate::excerpt::ExcerptLimits;
use crate::tools::EvidenceSource;

use super::state::{IncidentState, IncidentUpdate, Usage};

pub use crate::plan::{PlanStep, StepOutcome, render_plan};
pub use collect::Collector;
pub use found::Found;
pub use pods::restart_signal;
pub use walk::MAX_PODS;

/// Bounds of the investigation.
#[derive(Debug, Clone, PartialEq)]
pub struct InvestigateOptions {
    /// Excerpt sizes: per item and per round (default 3,500 / 40,000 characters).
    pub limits: ExcerptLimits,
    /// Lines requested from the end of a container log.
    pub tail_lines: u32,
    /// Longest wait for one evidence request; a request still running then is missing
    /// evidence, not a failed round. The tool layer has its own per-call timeout too.
    pub fetch_timeout: Duration,
    /// Tool calls one round may make; later steps are recorded as not sent.
    pub max_tool_calls: u32,
    /// Wall time the investigation may take; no request is sent after it.
    pub time_budget: Duration,
    /// Logs and traces are read from this long before the alert's start…
    pub window_before: chrono::Duration,
    /// … to this long after it (metric windows end there too).
    pub window_after: chrono::Duration,
}

impl Default for InvestigateOptions {
    fn default() -> Self {
        Self {
            limits: ExcerptLimits::default(),
            tail_lines: 300,
            fetch_timeout: Duration::from_secs(20),
            max_tool_calls: firstline_model::limits::MAX_TOOL_CALLS,
            time_budget: Duration::from_secs(firstline_model::limits::INVESTIGATE_SECS),
            window_before: chrono::Duration::minutes(30),
            window_after: chrono::Duration::minutes(15),
        }
    }
}

/// Walks the object graph from the alert against `source`, within the budgets, and runs the
/// detectors over what came back.
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
        if target
            .alertname
            .as_deref()
            .is_some_and(catalogue::is_heartbeat)
        {
            tracing::info!("a heartbeat alert: nothing to investigate");
            return IncidentUpdate::default();
        }
        let first_id = u32::try_from(state.evidence.len())
            .unwrap_or(u32::MAX - 1)
            .saturating_add(1);
        let mut collector = Collector::new(source, options, first_id);
        // A mention that names an object starts the round from it, in the alert's namespace.
        let steered;
        let state = match steered_state(state) {
            Some((with_object, lead)) => {
                collector.follow(Some((lead, 0)));
                steered = with_object;
                &steered
            }
            None => state,
        };
        let target = &state.alert.target;
        let located;
        let state = match anywhere::namespace_of(&mut collector, target).await {
            Some(namespace) => {
                let mut with_namespace = state.clone();
                with_namespace.alert.target.namespace = Some(namespace);
                located = with_namespace;
                &located
            }
            None => {
                // What its words spell first; else the Service its URL's host is routed to.
                let text = &state.alert.text;
                let spelled = match anywhere::spelled_subject(&mut collector, target, text).await {
                    Some(spelled) => Some(spelled),
                    None => anywhere::routed_subject(&mut collector, target, text)
                        .await
                        .map(|(namespace, service)| (namespace, "Service".to_string(), service)),
                };
                match spelled {
                    Some((namespace, kind, name)) => {
                        let mut with_subject = state.clone();
                        let target = &mut with_subject.alert.target;
                        target.namespace = Some(namespace);
                        if kind == "Service" {
                            target.service = Some(name);
                        } else {
                            target.workload_kind = Some(kind);
                            target.workload = Some(name);
                        }
                        located = with_subject;
                        &located
                    }
                    None => state,
                }
            }
        };
        let found = walk::walk(&mut collector, state, options).await;

        let ctx = detection_context(state);
        let mut findings = run_detectors(&collector.evidence, &ctx);
        demote_unrelated(&mut findings, &found);

        let current = tracing::Span::current();
        current.record("evidence", collector.evidence.len());
        current.record("missing", collector.missing.len());
        current.record("findings", findings.len());
        IncidentUpdate::default()
            .evidence(collector.evidence)
            .missing(collector.missing)
            .findings(findings)
            .plan(collector.plan)
            .usage(Usage {
                tool_calls: collector.calls,
                ..Usage::default()
            })
    }
    .instrument(span)
    .await
}

/// The state with the alert's subject replaced by the first object a mention names (a pod by its
/// generated name, anything else a Service or else a workload of that name), and the lead the
/// plan records; `None` when no mention names one.
fn steered_state(state: &IncidentState) -> Option<(IncidentState, String)> {
    let steering = state.steering.as_ref()?;
    let object = steering.objects.first()?;
    let mut steered = state.clone();
    let target = &mut steered.alert.target;
    target.pod = None;
    target.workload = None;
    target.workload_kind = None;
    target.workload_derived = false;
    target.service = None;
    target.autoscaler = None;
    target.volume_claim = None;
    target.volume = None;
    target.node = None;
    match firstline_alert::workload::deployment_from_pod_name(object) {
        Some(workload) => {
            target.pod = Some(object.clone());
            target.workload = Some(workload);
            target.workload_derived = true;
        }
        None => target.service = Some(object.clone()),
    }
    let lead = format!(
        "<@{}> asked: \"{}\" — starting from `{object}`",
        steering.user, steering.said
    );
    Some((steered, lead))
}

/// What the detectors know of the alert: its target, its start, the query the round re-ran
/// for its own expression and the threshold that expression fires at.
pub(crate) fn detection_context(state: &IncidentState) -> DetectionContext {
    let target = &state.alert.target;
    let mut ctx = DetectionContext::for_alert(target);
    ctx.alert_start = state.alert.anchor();
    ctx.alert_query = telemetry::alert_expression(target).map(|(query, _)| AlertQuery {
        threshold: Threshold::of_expression(&query),
        query,
    });
    ctx
}

/// A finding about an object the walk did not reach from the alert is context: it stays in the
/// report, never confirmed as this alert's cause. A slow span is exempt: it was found in the
/// alerting service's own requests, whichever service it runs in; so are what the alert's
/// objects depend on (a node, a dependency, a volume), which the explains rules link.
fn demote_unrelated(findings: &mut [Finding], found: &Found) {
    if found.related.is_empty() {
        return;
    }
    for finding in findings.iter_mut().filter(|f| {
        f.standing == Standing::Current
            && matches!(
                f.subject().map(|s| s.kind),
                Some(crate::detectors::ObjectKind::Pod | crate::detectors::ObjectKind::Workload)
            )
            && f.kind() != Kind::SlowSpan
    }) {
        let unrelated = finding.resource().is_some_and(|resource| {
            !found
                .related
                .iter()
                .any(|r| crate::detectors::same_pod(Some(&resource), Some(r)))
        });
        if unrelated && finding.verified {
            finding.standing = Standing::Unrelated;
        }
    }
    rank_findings(findings);
}
