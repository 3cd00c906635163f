//! firstline-investigation: one round of first-level analysis, deterministic at its core — the
//! incident graph, its nodes, and everything they read and check.
//!
//! ```text
//! START ─▶ investigate ─┐
//! START ─▶ recall ──────┴─(join)─▶ summarise ─▶ judge ─▶ END | ask ─▶ END
//! ```
//!
//! - [`graph`]: the wiring on `firstline-graph`, [`build_incident_graph`], [`RECURSION_LIMIT`],
//!   [`run_round`]; [`state`]: [`IncidentState`] and its reducers.
//! - [`investigate`](mod@investigate): the fixed steps through an [`tools::EvidenceSource`],
//!   evidence `E1…`, then the [`detectors`] that turn evidence into cited findings.
//! - [`recall`](mod@recall): similar past incidents in Postgres (full text + identifiers).
//! - [`summarise`](mod@summarise) and [`next_steps`]: the report from templates; [`propose`]: the
//!   one reversible action its verified cause may offer, for a person to approve.
//! - [`judge`](mod@judge): every claim's quote occurs in the evidence it cites, and "confirmed"
//!   only for a detector-verified cause; the verdict. [`ask`](mod@ask): up to three questions,
//!   typed; [`answers`]: people's replies read against them, in their own words; [`steer`]:
//!   what a mention asks (objects to start from, a hypothesis that [`hypothesis`] answers).
//! - [`report`]: the report and verdict types; [`render`]: Markdown and the stored result.
//! - [`evidence`]: evidence ids, digests, the quote check; [`excerpt`]: tool output bounded to
//!   excerpts within a per-round budget (secrets are removed by `firstline_redact`).
//! - [`tools`]: the capability interface and the MCP tool layer behind it (allowlisted, bounded,
//!   redacted, audited, cached by digest).
//!
//! Each node is a plain async function with a deterministic body; a model plugs in inside those
//! functions, behind the seams their docs name. The crate knows nothing of Temporal or Slack: the
//! worker's activities run it, `firstline investigate` and `firstline eval` run it directly.
//!
//! ```no_run
//! # async fn example<E: firstline_investigation::tools::EvidenceSource>(source: E) {
//! use std::sync::Arc;
//! use firstline_investigation::*;
//! use firstline_model::ThreadContext;
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

/// A `LazyLock<Regex>` compiled on first use from a literal pattern (a bad literal fails every
/// test that reaches it, so `expect` cannot fire in a build that passed them).
macro_rules! regex {
    ($pattern:expr) => {
        std::sync::LazyLock::new(|| regex::Regex::new($pattern).expect("static regex"))
    };
}

pub mod answers;
pub mod ask;
pub mod catalogue;
pub mod detectors;
pub mod evidence;
pub mod excerpt;
pub mod explain;
pub mod graph;
pub mod hypothesis;
pub mod investigate;
pub mod judge;
pub mod kube;
pub mod missing;
pub mod model_path;
pub mod model_run;
pub mod next_steps;
pub mod plan;
pub mod prior;
pub mod propose;
pub mod recall;
pub mod render;
pub mod report;
pub mod root;
pub mod sharing;
pub mod state;
pub mod steer;
pub mod summarise;
pub mod tools;

pub use graph::{
    GraphOptions, NodeTimeouts, RECURSION_LIMIT, build_incident_graph, node, run_round,
};
pub use investigate::InvestigateOptions;
pub use missing::{Missing, MissingKind};
pub use prior::PriorIncident;
pub use recall::{MIN_SIMILARITY, Memory, RecallOptions, meaning_text};
pub use render::{RoundResult, render_markdown};
pub use report::{Cause, Claim, Report, UnsupportedClaim, Verdict};
pub use state::{AlertInput, IncidentState, IncidentUpdate, Usage};

#[cfg(test)]
mod tests;
