//! The incident graph, deterministic: one round of first-level analysis (DESIGN §1, §6) with no
//! model — fixed investigation steps, recall of past incidents, a templated report, a
//! deterministic judge, and questions when the report is not grounded (invariant 10).
//!
//! - [`state`]: [`IncidentState`] and its reducers; [`AlertInput`], [`ThreadContext`], usage.
//! - [`investigate`](mod@investigate): the fixed steps through an
//!   [`EvidenceSource`](crate::tools::EvidenceSource), evidence `E1…`, the detectors.
//! - [`recall`](mod@recall): similar past incidents in Postgres (full text + identifiers).
//! - [`summarise`](mod@summarise) and [`next_steps`]: the report from templates.
//! - [`judge`](mod@judge): invariant 8 and "confirmed only when verified"; the verdict.
//! - [`ask`](mod@ask): up to three concrete questions.
//! - [`report`]: the report and verdict types; [`render`]: Markdown and JSON.
//! - [`graph`]: the wiring, [`build_incident_graph`], [`RECURSION_LIMIT`], [`run_round`].
//!
//! Each node is a plain async function with a deterministic body; the model path (a later
//! issue) plugs in inside those functions, behind the seams their docs name.
//!
//! ```no_run
//! # async fn example<E: firstline_activities::tools::EvidenceSource>(source: E) {
//! use std::sync::Arc;
//! use firstline_activities::incident::*;
//!
//! let graph = build_incident_graph(Arc::new(source), None, GraphOptions::default())
//!     .expect("the incident graph is well-formed");
//! let input = IncidentState::new(
//!     AlertInput::parse("[FIRING:1] KubePodCrashLooping …", None),
//!     ThreadContext::for_team("T0123"),
//! );
//! let done = run_round(&graph, input).await.expect("round");
//! println!("{}", render_markdown(&done));
//! # }
//! ```

pub mod ask;
pub mod graph;
pub mod investigate;
pub mod judge;
pub mod next_steps;
pub mod recall;
pub mod render;
pub mod report;
pub mod state;
pub mod summarise;

pub use graph::{
    GraphOptions, NodeTimeouts, RECURSION_LIMIT, build_incident_graph, node, run_round,
};
pub use investigate::InvestigateOptions;
pub use recall::{PriorIncident, RecallOptions};
pub use render::{RoundResult, render_markdown};
pub use report::{Cause, Claim, Report, UnsupportedClaim, Verdict};
pub use state::{
    AlertInput, ConversationMessage, EarlierRound, HumanAnswer, IncidentState, IncidentUpdate,
    Missing, MissingKind, ThreadContext, Usage,
};

#[cfg(test)]
mod tests;
