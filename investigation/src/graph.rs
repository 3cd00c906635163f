//! The incident graph's wiring on `firstline-graph`:
//!
//! ```text
//! START ─▶ investigate ─┐
//! START ─▶ recall ──────┴─(join)─▶ summarise ─▶ judge ─▶ END | ask ─▶ END
//! ```
//!
//! `investigate` and `recall` run in one super-step; the join runs `summarise` once both are
//! done. The router after `judge` ends the run when the verdict is grounded, else runs `ask`.
//! The longest run is four super-steps: [`RECURSION_LIMIT`]. Every node has a timeout
//! ([`NodeTimeouts`]) and no retry: the nodes turn their own failures into missing evidence, so
//! a timeout means something is stuck and the activity's retry (with the checkpoint) is the
//! right place to try again.

use std::sync::Arc;
use std::time::Duration;

use firstline_graph::{
    BoxError, BuildError, CompiledGraph, END, GraphBuilder, NodePolicy, RunError, START,
};

use crate::tools::EvidenceSource;

use super::ask::ask;
use super::investigate::{InvestigateOptions, investigate};
use super::judge::judge;
use super::recall::{Memory, RecallOptions, recall};
use super::state::IncidentState;
use super::summarise::summarise;

/// Node names.
pub mod node {
    pub const INVESTIGATE: &str = "investigate";
    pub const RECALL: &str = "recall";
    pub const SUMMARISE: &str = "summarise";
    pub const JUDGE: &str = "judge";
    pub const ASK: &str = "ask";
}

/// Super-steps of the longest run: (investigate ∥ recall), summarise, judge, ask. The graph is
/// acyclic; a run that needs more steps is a wiring bug and fails instead of looping.
pub const RECURSION_LIMIT: usize = 4;

/// Per-node timeouts (ARCHITECTURE.md, invariant 9: every loop and wait is bounded in code).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeTimeouts {
    /// The investigation's time budget plus one request's timeout.
    pub investigate: Duration,
    pub recall: Duration,
    pub summarise: Duration,
    pub judge: Duration,
    pub ask: Duration,
}

impl Default for NodeTimeouts {
    fn default() -> Self {
        Self {
            investigate: Duration::from_secs(firstline_model::limits::INVESTIGATE_SECS + 25),
            recall: Duration::from_secs(15),
            summarise: Duration::from_secs(10),
            judge: Duration::from_secs(10),
            ask: Duration::from_secs(10),
        }
    }
}

/// Everything the graph's nodes are configured with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphOptions {
    pub investigate: InvestigateOptions,
    pub recall: RecallOptions,
    pub timeouts: NodeTimeouts,
    /// The workspace's time zone: how a time written in an answer is read.
    pub time_zone: chrono_tz::Tz,
}

impl GraphOptions {
    /// The defaults with the budgets the `round.*` settings give.
    pub fn from_settings(round: &firstline_config::RoundSettings) -> Self {
        let mut options = Self::default();
        options.investigate.max_tool_calls = round.max_tool_calls;
        options.investigate.time_budget = Duration::from_secs(round.investigate_secs);
        options.time_zone = round.zone();
        // The node outlives its own budget by the longest single request.
        options.timeouts.investigate = options.investigate.time_budget
            + options.investigate.fetch_timeout
            + Duration::from_secs(5);
        options
    }
}

/// The compiled incident graph over `source` (the tool layer) and `memory` (recall's incidents
/// and embedding model; `None` runs without memory). Compiling takes microseconds, so build one per round when the
/// source is scoped to a round (the tool layer's `RoundTools` is: its cache key names the
/// thread and round); a compiled graph is cheap to clone and may run concurrently.
pub fn build_incident_graph<E: EvidenceSource>(
    source: Arc<E>,
    memory: Option<Memory>,
    options: GraphOptions,
) -> Result<CompiledGraph<IncidentState>, BuildError> {
    let timeouts = options.timeouts.clone();
    let investigate_options = Arc::new(options.investigate);
    let recall_options = Arc::new(options.recall);
    let memory = memory.map(Arc::new);

    let mut g = GraphBuilder::<IncidentState>::new();
    g.add_node_with(
        node::INVESTIGATE,
        NodePolicy::new().timeout(timeouts.investigate),
        move |state: Arc<IncidentState>| {
            let source = Arc::clone(&source);
            let options = Arc::clone(&investigate_options);
            async move { Ok::<_, BoxError>(investigate(&*source, &state, &options).await) }
        },
    )
    .add_node_with(
        node::RECALL,
        NodePolicy::new().timeout(timeouts.recall),
        move |state: Arc<IncidentState>| {
            let memory = memory.clone();
            let options = Arc::clone(&recall_options);
            async move { Ok::<_, BoxError>(recall(memory.as_deref(), &state, &options).await) }
        },
    )
    .add_node_with(
        node::SUMMARISE,
        NodePolicy::new().timeout(timeouts.summarise),
        |state: Arc<IncidentState>| async move { Ok::<_, BoxError>(summarise(&state).await) },
    )
    .add_node_with(
        node::JUDGE,
        NodePolicy::new().timeout(timeouts.judge),
        |state: Arc<IncidentState>| async move { Ok::<_, BoxError>(judge(&state).await) },
    )
    .add_node_with(
        node::ASK,
        NodePolicy::new().timeout(timeouts.ask),
        |state: Arc<IncidentState>| async move { Ok::<_, BoxError>(ask(&state).await) },
    )
    .add_edge(START, node::INVESTIGATE)
    .add_edge(START, node::RECALL)
    .add_join([node::INVESTIGATE, node::RECALL], node::SUMMARISE)
    .add_edge(node::SUMMARISE, node::JUDGE)
    .add_conditional_edges(node::JUDGE, [node::ASK, END], |state: &IncidentState| {
        if state.grounded() { END } else { node::ASK }
    })
    .add_edge(node::ASK, END);
    g.compile()
}

/// Runs one round to the end with the graph's recursion limit.
pub async fn run_round(
    graph: &CompiledGraph<IncidentState>,
    input: IncidentState,
) -> Result<IncidentState, RunError<IncidentState>> {
    graph.invoke(input, RECURSION_LIMIT).await
}
