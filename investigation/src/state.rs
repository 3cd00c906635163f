//! The incident graph's state: what one round works on, key by key, with each key's reducer.
//!
//! The graph runtime folds node updates into [`IncidentState`] at the end of every super-step.
//! `investigate` and `recall` run in the same step, so every key both may write is an *append*
//! or *fold* key (evidence, missing, findings, usage); the rest have one writer each. The state
//! is serde-serialisable because the runtime's checkpoints of it are stored in Postgres.

use std::ops::AddAssign;

use chrono::{DateTime, Utc};
use firstline_graph::{graph_state, sum};
use serde::{Deserialize, Serialize};

use crate::answers::ReadAnswer;
use crate::detectors::Finding;
use crate::evidence::Evidence;
use crate::missing::Missing;
use crate::model_run::ModelRun;
use crate::plan::PlanStep;
use crate::prior::PriorIncident;
use crate::report::{Report, Verdict};
use crate::steer::Steering;
use firstline_alert::{AlertTarget, parse_alert};
use firstline_model::{Question, ThreadContext};

graph_state! {
    /// One round of the incident graph. Build the input with [`IncidentState::new`].
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct IncidentState {
        /// The alert: raw text and what was parsed from it. Input; no node writes it.
        pub alert: AlertInput,
        /// The thread so far (earlier rounds, open questions, human answers). Input.
        pub context: ThreadContext,
        /// The answers to the last round's questions, as read ([`crate::answers`]). Input: the
        /// alert's target already carries what they named.
        #[serde(default)]
        pub answers: Vec<ReadAnswer>,
        /// What the round's newest mention asks ([`crate::steer`]): objects to start from, a
        /// hypothesis the reply's first line answers. Input.
        #[serde(default)]
        pub steering: Option<Steering>,
        /// Evidence items `E1…`, in the order the tools were called.
        pub evidence: Vec<Evidence> = append,
        /// What could not be checked, and why.
        pub missing: Vec<Missing> = append,
        /// Similar past incidents (written by `recall` only).
        pub prior_incidents: Vec<PriorIncident>,
        /// Detector findings over the evidence, ranked.
        pub findings: Vec<Finding> = append,
        /// The summary (`summarise`).
        pub report: Option<Report>,
        /// Whether the report is grounded enough to post (`judge`).
        pub verdict: Option<Verdict>,
        /// Up to three questions for the thread when the report is not grounded (`ask`).
        pub questions: Vec<Question>,
        /// Tool calls, model calls and tokens spent by all nodes.
        pub usage: Usage = fold(sum),
        /// The evidence plan as it ran: each request, why, and what came of it (`investigate`).
        #[serde(default)]
        pub plan: Vec<PlanStep>,
        /// What the model path did, when a model is configured (`model_path::refine`).
        #[serde(default)]
        pub model: Option<ModelRun>,
    }
    /// A partial update of [`IncidentState`], returned by one node.
    #[derive(Debug, Serialize, Deserialize)]
    pub struct IncidentUpdate;
}

impl IncidentState {
    /// The input of a round: the alert and what the thread already knows.
    pub fn new(alert: AlertInput, context: ThreadContext) -> Self {
        Self {
            alert,
            context,
            ..Self::default()
        }
    }

    /// True when the judge said the report may be posted.
    pub fn grounded(&self) -> bool {
        self.verdict.as_ref().is_some_and(|v| v.grounded)
    }
}

/// The alert message and its parse.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AlertInput {
    /// The message as posted (untrusted text).
    pub text: String,
    /// What [`parse_alert`] made of it.
    pub target: AlertTarget,
    /// When the message was posted; the alert window falls back to it when the alert carries
    /// no start time.
    pub posted_at: Option<DateTime<Utc>>,
}

impl AlertInput {
    /// Parses `text`. Never fails: what the text does not say is in `target.unknown`.
    pub fn parse(text: impl Into<String>, posted_at: Option<DateTime<Utc>>) -> Self {
        let text = text.into();
        let target = parse_alert(&text);
        Self {
            text,
            target,
            posted_at,
        }
    }

    /// When the alert window is anchored: the alert's start, else when it was posted.
    pub fn anchor(&self) -> Option<DateTime<Utc>> {
        self.target.starts_at.or(self.posted_at)
    }

    /// The most specific thing the alert is about: pod, else workload, else service.
    pub fn subject(&self) -> Option<&str> {
        let target = &self.target;
        target
            .pod
            .as_deref()
            .or(target.workload.as_deref())
            .or(target.service.as_deref())
    }

    /// `around 14:02 UTC`, or `around when the alert fired`.
    pub fn around(&self) -> String {
        match self.anchor() {
            Some(at) => format!("around {}", clock(at)),
            None => "around when the alert fired".to_string(),
        }
    }
}

/// `14:02 UTC`.
pub(crate) fn clock(at: DateTime<Utc>) -> String {
    at.format("%H:%M UTC").to_string()
}

/// What a round spent. Summed over nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Evidence requests made (each one tool call or cache hit).
    pub tool_calls: u32,
    /// Model calls (zero without a model).
    pub model_calls: u32,
    /// Prompt tokens sent to the model (zero without a model).
    pub prompt_tokens: u64,
    /// Completion tokens the model returned (zero without a model).
    pub completion_tokens: u64,
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.tool_calls = self.tool_calls.saturating_add(other.tool_calls);
        self.model_calls = self.model_calls.saturating_add(other.model_calls);
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
    }
}
