//! An [`EvidenceSource`] that serves fixed text per capability and records every request.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::evidence::{Capability, MissingEvidence};
use crate::tools::{CapabilityRequest, EvidenceSource, Fetched, ToolOutput};

#[derive(Default)]
pub struct FakeSource {
    answers: Vec<(Capability, Result<String, String>)>,
    requests: Mutex<Vec<CapabilityRequest>>,
}

impl FakeSource {
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers requests for `capability` with `text`.
    pub fn serve(mut self, capability: Capability, text: &str) -> Self {
        self.answers.push((capability, Ok(text.to_string())));
        self
    }

    /// Answers requests for `capability` with missing evidence.
    pub fn fail(mut self, capability: Capability, reason: &str) -> Self {
        self.answers.push((capability, Err(reason.to_string())));
        self
    }

    /// Every request made so far, in order.
    pub fn requests(&self) -> Vec<CapabilityRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl EvidenceSource for FakeSource {
    /// Only what the world serves or fails is configured, as with a real server's tool list.
    fn supports(&self, capability: &Capability) -> bool {
        self.answers.iter().any(|(c, _)| c == capability)
    }

    async fn fetch(&self, request: CapabilityRequest) -> Fetched {
        let capability = request.capability();
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request.clone());
        let answer = self
            .answers
            .iter()
            .find(|(c, _)| *c == capability)
            .map(|(_, a)| a.clone());
        match answer {
            Some(Ok(text)) => Fetched::Found(ToolOutput {
                capability,
                server: "fake".to_string(),
                tool: tool_name(&request).to_string(),
                args: serde_json::to_value(&request).unwrap_or_default(),
                text,
                fetched_at: DateTime::<Utc>::UNIX_EPOCH,
                cached: false,
            }),
            Some(Err(reason)) => Fetched::Missing(MissingEvidence { capability, reason }),
            None => Fetched::Missing(MissingEvidence {
                capability: capability.clone(),
                reason: format!("no tool configured for {}", capability.label()),
            }),
        }
    }
}

fn tool_name(request: &CapabilityRequest) -> &'static str {
    match request {
        CapabilityRequest::PodDescribe { .. } => "pods_get",
        CapabilityRequest::ObjectGet { .. } => "resources_get",
        CapabilityRequest::ObjectList { .. } => "resources_list",
        CapabilityRequest::PodList { .. } => "pods_list_in_namespace",
        CapabilityRequest::PodLogs { .. } => "pods_log",
        CapabilityRequest::Events { .. } => "events_list",
        CapabilityRequest::DeployHistory { .. } => "rollout_history",
        CapabilityRequest::MetricRange { .. } => "query_range",
        CapabilityRequest::LogQuery { .. } => "query_loki",
        CapabilityRequest::TraceSearch { .. } => "search_traces",
    }
}
