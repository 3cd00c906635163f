//! Collection: the requests of one investigation turned into evidence, inside its budgets.
//!
//! Ids `E1…` are assigned in call order so a replayed round cites the same ids; every excerpt
//! comes out of one per-round character budget; at most `max_tool_calls` requests are sent and
//! none after the time budget, so a wide object graph cannot grow the round without bound; a
//! request that fails or outlives its timeout becomes missing evidence instead of failing the
//! round. Every request, sent or not, is a [`PlanStep`] with the reason it was made.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::evidence::{Capability, Evidence, EvidenceId};
use crate::excerpt::RoundBudget;
use crate::missing::Missing;
use crate::tools::{CapabilityRequest, EvidenceSource, Fetched};
use firstline_redact::redact;

use super::InvestigateOptions;
use crate::plan::{PlanStep, StepOutcome};

/// Makes evidence requests and keeps what they returned: ids in call order, excerpts within
/// the round budget, failures as missing evidence, the plan as it ran.
pub struct Collector<'a, E> {
    source: &'a E,
    fetch_timeout: Duration,
    budget: RoundBudget,
    next_id: u32,
    max_calls: u32,
    deadline: Instant,
    /// Answers already received this round, by request, so a step asked twice (two pods'
    /// shared node) costs one call.
    answered: BTreeMap<String, Option<String>>,
    budget_noted: bool,
    /// The lead being followed: recorded with every step made for it.
    lead: Option<String>,
    /// Links from the alert's objects of the lead being followed (0 for the alert's own).
    depth: u8,
    /// The depth at which each evidence item was read.
    depths: BTreeMap<EvidenceId, u8>,
    /// Evidence gathered so far.
    pub evidence: Vec<Evidence>,
    /// Missing evidence so far.
    pub missing: Vec<Missing>,
    /// Requests sent.
    pub calls: u32,
    /// Every step, in order.
    pub plan: Vec<PlanStep>,
}

impl<'a, E: EvidenceSource> Collector<'a, E> {
    /// A collector whose first evidence item will be `E<first_id>`.
    pub fn new(source: &'a E, options: &InvestigateOptions, first_id: u32) -> Self {
        Self {
            source,
            fetch_timeout: options.fetch_timeout,
            budget: RoundBudget::new(options.limits),
            next_id: first_id.max(1),
            max_calls: options.max_tool_calls,
            deadline: Instant::now() + options.time_budget,
            answered: BTreeMap::new(),
            budget_noted: false,
            lead: None,
            depth: 0,
            depths: BTreeMap::new(),
            evidence: Vec::new(),
            missing: Vec::new(),
            calls: 0,
            plan: Vec::new(),
        }
    }

    /// Whether another request may still be sent.
    pub fn has_budget(&self) -> bool {
        self.calls < self.max_calls && Instant::now() < self.deadline
    }

    /// Whether a configured server offers `capability`.
    pub fn supports(&self, capability: &Capability) -> bool {
        self.source.supports(capability)
    }

    /// Makes one request, for `why`. Returns the (redacted, not excerpted) text when the source
    /// answered.
    pub async fn fetch(
        &mut self,
        request: CapabilityRequest,
        why: impl Into<String>,
    ) -> Option<String> {
        let why = why.into();
        let capability = request.capability();
        let key = serde_json::to_string(&request).unwrap_or_default();
        if let Some(earlier) = self.answered.get(&key) {
            let earlier = earlier.clone();
            self.step(request, why, StepOutcome::Repeated);
            return earlier;
        }
        if !self.source.supports(&capability) {
            // Logs and traces are optional sources; the cluster and metrics are not, and the
            // operator should hear that they are not configured.
            if !matches!(capability, Capability::LogQuery | Capability::TraceSearch)
                && !self.missing.iter().any(|m| m.capability == capability)
            {
                self.missing.push(Missing::failed(
                    capability.clone(),
                    format!("no MCP tool is configured for {}", capability.label()),
                ));
            }
            self.step(request, why, StepOutcome::NotConfigured);
            return None;
        }
        if self.calls >= self.max_calls {
            self.note_budget(format!(
                "the round's tool-call budget ({} calls) was spent first",
                self.max_calls
            ));
            self.step(request, why, StepOutcome::OverBudget);
            return None;
        }
        let now = Instant::now();
        if now >= self.deadline {
            self.note_budget("the round's time budget was spent first".to_string());
            self.step(request, why, StepOutcome::OutOfTime);
            return None;
        }
        self.calls = self.calls.saturating_add(1);
        let timeout = self.fetch_timeout.min(self.deadline - now);
        let fetched = tokio::time::timeout(timeout, self.source.fetch(request.clone())).await;
        let output = match fetched {
            Ok(Fetched::Found(output)) => output,
            Ok(Fetched::Missing(missing)) => {
                tracing::debug!(capability = capability.label(), reason = %missing.reason, "evidence missing");
                self.step(request, why, StepOutcome::Missing(missing.reason.clone()));
                self.missing.push(missing.into());
                self.answered.insert(key, None);
                return None;
            }
            Err(_) => {
                let reason = format!("no answer within {} s", timeout.as_secs_f64().round());
                self.step(request, why, StepOutcome::Missing(reason.clone()));
                self.missing.push(Missing::failed(capability, reason));
                self.answered.insert(key, None);
                return None;
            }
        };
        let text = redact(&output.text).text;
        let excerpt = self.budget.excerpt(&text);
        let id = match EvidenceId::new(self.next_id) {
            Ok(id) => id,
            Err(e) => {
                self.step(request, why, StepOutcome::Missing(e.to_string()));
                return None;
            }
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
        self.depths.insert(id, self.depth);
        self.step(request, why, StepOutcome::Evidence(id));
        self.answered.insert(key, Some(text.clone()));
        Some(text)
    }

    /// Steps from now on are made for `lead` (what it is and what proposed it), `depth` links
    /// from the alert's objects; `None` returns to the alert's own objects.
    pub fn follow(&mut self, lead: Option<(String, u8)>) {
        (self.lead, self.depth) = match lead {
            Some((lead, depth)) => (Some(lead), depth),
            None => (None, 0),
        };
    }

    /// The depth at which `id` was read (0 when it was not read by this collector).
    pub fn depth_of(&self, id: EvidenceId) -> u8 {
        self.depths.get(&id).copied().unwrap_or(0)
    }

    /// Records a step not taken because the alert or the evidence gives it no target.
    pub fn skip(&mut self, capability: Capability, reason: impl Into<String>) {
        self.missing.push(Missing::skipped(capability, reason));
    }

    fn step(&mut self, request: CapabilityRequest, why: String, outcome: StepOutcome) {
        self.plan.push(PlanStep {
            request,
            why,
            lead: self.lead.clone(),
            outcome,
        });
    }

    /// One line in the report for everything the budget cut, however many steps that was.
    /// Says so when the round ends with its tool-call budget spent, even if nothing more was
    /// asked: a reader weighs a round that used every call as one that may have stopped short.
    pub fn note_spent(&mut self) {
        if self.calls >= self.max_calls {
            self.note_budget(format!(
                "the round used its whole tool-call budget ({} calls): what it did not reach \
                 was not read",
                self.max_calls
            ));
        }
    }

    fn note_budget(&mut self, reason: String) {
        if !self.budget_noted {
            self.budget_noted = true;
            self.missing.push(Missing::skipped(
                Capability::Other("further evidence".to_string()),
                reason,
            ));
        }
    }
}
