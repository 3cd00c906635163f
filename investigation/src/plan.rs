//! The evidence plan as it ran: every request the investigation made or meant to make, in
//! order, with why it was made and what came of it. It is data, so a reviewer can read why each
//! call was made (`firstline investigate --plan`) and a test can check order and budget.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::evidence::EvidenceId;
use crate::tools::CapabilityRequest;

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanStep {
    /// What was asked for.
    pub request: CapabilityRequest,
    /// Why, in words a reviewer understands ("the deployment's pods, by its selector").
    pub why: String,
    /// The lead this step follows and what proposed it, when it is not one of the alert's own
    /// objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<String>,
    pub outcome: StepOutcome,
}

/// What became of a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome", content = "detail")]
pub enum StepOutcome {
    /// The tool answered: this evidence item.
    Evidence(EvidenceId),
    /// The tool could not answer (error, timeout, refusal).
    Missing(String),
    /// Not sent: the round's tool-call budget was spent.
    OverBudget,
    /// Not sent: the round's time budget was spent.
    OutOfTime,
    /// Not sent: no configured server offers this capability.
    NotConfigured,
    /// Not sent again: the same request was already made this round.
    Repeated,
}

impl StepOutcome {
    /// Whether a tool was called for this step.
    pub fn called(&self) -> bool {
        matches!(self, StepOutcome::Evidence(_) | StepOutcome::Missing(_))
    }
}

/// The request in one line: capability and target.
pub fn describe_request(request: &CapabilityRequest) -> String {
    let ns = |namespace: &Option<String>| {
        namespace
            .as_deref()
            .map_or(String::new(), |n| format!("{n}/"))
    };
    match request {
        CapabilityRequest::PodDescribe { namespace, pod } => {
            format!("describe pod {namespace}/{pod}")
        }
        CapabilityRequest::ObjectGet {
            namespace,
            kind,
            name,
        } => format!("get {kind} {}{name}", ns(namespace)),
        CapabilityRequest::ObjectList {
            namespace,
            kind,
            label_selector,
        } => format!(
            "list {kind} in {}{}",
            namespace.as_deref().unwrap_or("all namespaces"),
            label_selector
                .as_deref()
                .map_or(String::new(), |s| format!(" ({s})"))
        ),
        CapabilityRequest::PodList {
            namespace,
            label_selector,
        } => format!(
            "list pods in {namespace}{}",
            label_selector
                .as_deref()
                .map_or(String::new(), |s| format!(" ({s})"))
        ),
        CapabilityRequest::PodLogs {
            namespace,
            pod,
            container,
            previous,
            ..
        } => format!(
            "{} log of {namespace}/{pod}{}",
            if *previous { "previous" } else { "current" },
            container
                .as_deref()
                .map_or(String::new(), |c| format!(" ({c})"))
        ),
        CapabilityRequest::Events {
            namespace,
            object,
            warnings_only,
        } => format!(
            "{} in {namespace}{}",
            if *warnings_only {
                "warning events"
            } else {
                "events"
            },
            object
                .as_deref()
                .map_or(String::new(), |o| format!(" for {o}"))
        ),
        CapabilityRequest::DeployHistory {
            namespace,
            workload,
        } => format!("rollout history of {namespace}/{workload}"),
        CapabilityRequest::MetricRange {
            query, start, end, ..
        } => format!(
            "query `{query}` over {} h",
            ((*end - *start).num_minutes() as f64 / 60.0 * 10.0).round() / 10.0
        ),
        CapabilityRequest::LogQuery { query, .. } => format!("log query `{query}`"),
        CapabilityRequest::TraceSearch { service, .. } => format!("traces of service {service}"),
    }
}

/// The plan as text, one numbered line per step.
pub fn render_plan(plan: &[PlanStep]) -> String {
    let mut out = String::new();
    for (i, step) in plan.iter().enumerate() {
        let outcome = match &step.outcome {
            StepOutcome::Evidence(id) => format!("→ {id}"),
            StepOutcome::Missing(reason) => format!("→ missing: {reason}"),
            StepOutcome::OverBudget => "→ not sent: tool-call budget spent".to_string(),
            StepOutcome::OutOfTime => "→ not sent: time budget spent".to_string(),
            StepOutcome::NotConfigured => "→ not sent: no server offers it".to_string(),
            StepOutcome::Repeated => "→ already asked".to_string(),
        };
        let _ = writeln!(
            out,
            "{:>2}. {}\n    why: {}",
            i + 1,
            describe_request(&step.request),
            step.why
        );
        if let Some(lead) = &step.lead {
            let _ = writeln!(out, "    lead: {lead}");
        }
        let _ = writeln!(out, "    {outcome}");
    }
    out
}
