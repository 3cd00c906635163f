//! A small Pregel-style graph runtime with LangGraph's semantics.
//!
//! A *graph* is named async *nodes* joined by *edges*. A run moves a typed *state* through the
//! graph in **super-steps**: every node due in a step runs concurrently on the same snapshot of
//! the state, each returns a partial update, and at the end of the step all updates are folded
//! into the state through per-key reducers, in node-name order, all or nothing. The edges out of
//! the nodes that ran decide which nodes are due next; the run ends when none are.
//!
//! The pieces, one module each:
//!
//! - [`state`]: the [`State`] trait, the [`graph_state!`] macro and the reducers (overwrite,
//!   append, fold). Two writes to an overwrite key in one step are an error, not a race.
//! - [`builder`]: [`GraphBuilder`] — nodes, fixed / conditional / join edges, and the checks of
//!   [`compile`](GraphBuilder::compile).
//! - [`graph`]: [`CompiledGraph`] — introspection ([`nodes`](CompiledGraph::nodes),
//!   [`edges`](CompiledGraph::edges), [`mermaid`](CompiledGraph::mermaid)).
//! - [`run`]: the super-step loop — [`invoke`](CompiledGraph::invoke),
//!   [`stream`](CompiledGraph::stream) (one [`StepEvent`] per step) and
//!   [`resume`](CompiledGraph::resume).
//! - [`policy`]: per-node timeout and retry ([`NodePolicy`], [`RetryPolicy`]).
//! - [`checkpoint`]: the serialisable [`Checkpoint`] taken after every step; after a failed step
//!   it keeps the succeeded siblings' writes, so a resume re-runs only what failed.
//! - [`error`]: [`BuildError`], [`GraphError`] and [`RunError`] (an error plus the checkpoint to
//!   resume from).
//!
//! The recursion limit (the most super-steps a run may take) has no default: every run names
//! it, and a run that needs more fails *before* starting the extra step. It counts only steps
//! that run nodes (a parallel step counts once); LangGraph also counts a hidden input step, so
//! our limit `L` admits the runs LangGraph's `L + 1` admits.
//!
//! Nodes of one step are polled concurrently on the caller's task (not spawned): they are meant
//! to wait on I/O. Put CPU-heavy work in `tokio::task::spawn_blocking` inside the node.
//!
//! # Example
//!
//! Two branches in parallel, a join, then a router that ends the run or asks a question:
//!
//! ```
//! use std::sync::Arc;
//! use firstline_graph::{graph_state, sum, BoxError, GraphBuilder, END, START};
//! use futures::StreamExt;
//!
//! graph_state! {
//!     /// The state of a tiny investigation.
//!     #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
//!     pub struct Case {
//!         /// What happened.
//!         pub alert: String,
//!         /// Evidence from every branch, in node-name order.
//!         pub evidence: Vec<String> = append,
//!         /// The summary (one writer).
//!         pub summary: Option<String>,
//!         /// Whether the summary is good enough to post.
//!         pub grounded: bool,
//!         /// Tokens used by all nodes.
//!         pub tokens: u64 = fold(sum),
//!     }
//!     /// A partial update of `Case`.
//!     #[derive(Debug, serde::Serialize, serde::Deserialize)]
//!     pub struct CaseUpdate;
//! }
//!
//! async fn investigate(case: Arc<Case>) -> Result<CaseUpdate, BoxError> {
//!     Ok(CaseUpdate::default()
//!         .evidence(vec![format!("logs for {}", case.alert)])
//!         .tokens(10))
//! }
//!
//! async fn summarise(case: Arc<Case>) -> Result<CaseUpdate, BoxError> {
//!     let summary = case.evidence.join("; ");
//!     Ok(CaseUpdate::default().summary(Some(summary)).grounded(true).tokens(5))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut g = GraphBuilder::<Case>::new();
//! g.add_node("investigate", investigate)
//!     .add_node("recall", |_case: Arc<Case>| async {
//!         Ok(CaseUpdate::default().evidence(vec!["seen before".into()]).tokens(1))
//!     })
//!     .add_node("summarise", summarise)
//!     .add_node("ask", |_case: Arc<Case>| async { Ok(CaseUpdate::default()) })
//!     .add_edge(START, "investigate")
//!     .add_edge(START, "recall")
//!     .add_join(["investigate", "recall"], "summarise")
//!     .add_conditional_edges("summarise", ["ask", END], |case: &Case| {
//!         if case.grounded { END } else { "ask" }
//!     })
//!     .add_edge("ask", END);
//! let graph = g.compile()?;
//!
//! // Run to the end.
//! let input = Case { alert: "PodCrashLooping".into(), ..Default::default() };
//! let done = graph.invoke(input.clone(), 10).await?;
//! assert_eq!(done.evidence, ["logs for PodCrashLooping", "seen before"]);
//! assert_eq!(done.tokens, 16);
//! assert!(done.grounded);
//!
//! // Or step by step, keeping each step's checkpoint (e.g. in a database).
//! let mut steps = graph.stream(input, 10);
//! let mut saved = None;
//! while let Some(event) = steps.next().await {
//!     let event = event?;
//!     println!("step {}: ran {:?}, next {:?}", event.step, event.ran, event.next);
//!     saved = Some(serde_json::to_string(&event.checkpoint())?);
//! }
//! assert_eq!(saved.as_deref().map(|s| s.contains("\"next\":[]")), Some(true));
//!
//! // Resume a stored checkpoint (here: the finished one, so nothing is left to run).
//! let checkpoint = serde_json::from_str(&saved.unwrap_or_default())?;
//! assert_eq!(graph.resume(checkpoint, 10).await?, done);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod builder;
pub mod checkpoint;
pub mod error;
pub mod graph;
pub mod policy;
pub mod run;
pub mod state;

pub use builder::{END, Edge, GraphBuilder, Route, START};
pub use checkpoint::{Checkpoint, JoinProgress, PendingWrite};
pub use error::{BuildError, GraphError, RunError};
pub use graph::CompiledGraph;
pub use policy::{AttemptError, BoxError, NodePolicy, RetryPolicy};
pub use run::{StepEvent, StepStream};
pub use state::{State, max, sum};
