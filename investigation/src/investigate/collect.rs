//! Collection: the requests of one investigation turned into evidence. Ids `E1…` are assigned
//! in call order so a replayed round cites the same ids; every excerpt comes out of one
//! per-round budget so many calls cannot grow the round without bound; a request that fails or
//! outlives its timeout becomes missing evidence instead of failing the round.

use std::time::Duration;

use crate::evidence::{Capability, Evidence, EvidenceId};
use crate::excerpt::RoundBudget;
use crate::redact::redact;
use crate::state::Missing;
use crate::tools::{CapabilityRequest, EvidenceSource, Fetched};

use super::InvestigateOptions;

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
