//! Running a graph: bulk-synchronous super-steps, streamed one event per step.
//!
//! One super-step:
//!
//! 1. **Plan.** The nodes due this step were decided at the end of the previous one (or by the
//!    edges out of `START`). If there are none, the run is over. If `recursion_limit` steps have
//!    already run, the run fails *before* starting another.
//! 2. **Run.** All due nodes run concurrently (futures polled together on the caller's task),
//!    each with the same `Arc` snapshot of the state as of the start of the step, each under its
//!    own timeout and retry policy and a `graph.node` tracing span. Their updates are buffered,
//!    so siblings never see each other's writes. The first node to fail for good cancels the
//!    others still running (their futures are dropped); the updates of those that finished are
//!    kept as pending writes in the error's checkpoint.
//! 3. **Commit.** Two writes to one overwrite key fail the step. Otherwise routers and joins
//!    decide the next step's nodes, and the updates are folded into the state in node-name
//!    order, whatever order the nodes finished in. Nothing of a failed step is applied.
//!
//! [`CompiledGraph::stream`] yields a [`StepEvent`] after each commit, with the checkpoint to
//! persist; [`CompiledGraph::invoke`] runs the same steps to the end and returns the state.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::stream::{BoxStream, FuturesUnordered, StreamExt};
use futures::{FutureExt, stream};
use tracing::Instrument;

use crate::checkpoint::{Checkpoint, JoinProgress, PendingWrite};
use crate::error::{GraphError, RunError};
use crate::graph::{CompiledGraph, Inner, NodeEntry, Out, Target};
use crate::policy::AttemptError;
use crate::state::State;

/// The stream returned by [`CompiledGraph::stream`]: one item per super-step, ending after the
/// last step or after the first error. It is `Send`, `'static` and `Unpin`.
pub type StepStream<S> = BoxStream<'static, Result<StepEvent<S>, RunError<S>>>;

/// What one super-step did. Yielded by [`CompiledGraph::stream`].
pub struct StepEvent<S: State> {
    /// The super-step, from 1.
    pub step: usize,
    /// The nodes that ran, in name order.
    pub ran: Vec<String>,
    /// Their updates, in name order (the order they were applied in).
    pub updates: Vec<(String, S::Update)>,
    /// The nodes of the next step, in name order; empty after the last step.
    pub next: Vec<String>,
    /// The state after this step.
    pub state: Arc<S>,
    joins: Vec<JoinProgress>,
}

impl<S: State> StepEvent<S> {
    /// The checkpoint after this step: store it to resume from here.
    pub fn checkpoint(&self) -> Checkpoint<S> {
        Checkpoint {
            step: self.step,
            state: (*self.state).clone(),
            next: self.next.clone(),
            joins: self.joins.clone(),
            pending_writes: Vec::new(),
        }
    }
}

impl<S: State> std::fmt::Debug for StepEvent<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepEvent")
            .field("step", &self.step)
            .field("ran", &self.ran)
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl<S: State> CompiledGraph<S> {
    /// Runs the graph from `input` to the end and returns the final state.
    ///
    /// `recursion_limit` is the most super-steps the run may take; a run that needs more fails
    /// with [`GraphError::RecursionLimit`] without starting step `recursion_limit + 1`.
    pub async fn invoke(&self, input: S, recursion_limit: usize) -> Result<S, RunError<S>> {
        let run = Run::start(Arc::clone(&self.inner), input, recursion_limit)?;
        run.finish().await
    }

    /// Runs the graph from `input`, yielding one [`StepEvent`] per super-step. After an error
    /// the stream ends.
    pub fn stream(&self, input: S, recursion_limit: usize) -> StepStream<S> {
        events(Run::start(Arc::clone(&self.inner), input, recursion_limit))
    }

    /// Continues a run from `checkpoint` to the end. Steps already taken count against
    /// `recursion_limit`. Nodes with a pending write in the checkpoint are not run again.
    pub async fn resume(
        &self,
        checkpoint: Checkpoint<S>,
        recursion_limit: usize,
    ) -> Result<S, RunError<S>> {
        let run = Run::resume(Arc::clone(&self.inner), checkpoint, recursion_limit)?;
        run.finish().await
    }

    /// Continues a run from `checkpoint`, yielding one [`StepEvent`] per super-step.
    pub fn resume_stream(
        &self,
        checkpoint: Checkpoint<S>,
        recursion_limit: usize,
    ) -> StepStream<S> {
        events(Run::resume(
            Arc::clone(&self.inner),
            checkpoint,
            recursion_limit,
        ))
    }
}

fn events<S: State>(run: Result<Run<S>, RunError<S>>) -> StepStream<S> {
    Box::pin(stream::unfold(Some(run), |run| async move {
        match run? {
            Err(e) => Some((Err(e), None)),
            Ok(mut run) => match run.step(true).await {
                Ok(Outcome::Ran(Some(event))) => Some((Ok(event), Some(Ok(run)))),
                Ok(Outcome::Ran(None) | Outcome::Done) => None,
                Err(e) => Some((Err(e), None)),
            },
        }
    }))
}

enum Outcome<S: State> {
    Done,
    Ran(Option<StepEvent<S>>),
}

#[derive(Clone)]
struct JoinState {
    arrived: Vec<bool>,
    count: usize,
}

struct Run<S: State> {
    graph: Arc<Inner<S>>,
    state: Arc<S>,
    /// Node ids of the next step, sorted (= name order).
    next: Vec<usize>,
    joins: Vec<JoinState>,
    /// Steps completed.
    step: usize,
    limit: usize,
    /// Writes restored from a checkpoint, used instead of running those nodes.
    pending: Vec<(usize, S::Update)>,
    last_ran: Vec<usize>,
}

impl<S: State> Run<S> {
    fn start(graph: Arc<Inner<S>>, input: S, limit: usize) -> Result<Self, RunError<S>> {
        let joins = graph
            .joins
            .iter()
            .map(|j| JoinState {
                arrived: vec![false; j.sources.len()],
                count: 0,
            })
            .collect();
        let mut run = Run {
            state: Arc::new(input),
            next: Vec::new(),
            joins,
            step: 0,
            limit,
            pending: Vec::new(),
            last_ran: Vec::new(),
            graph,
        };
        let mut next = Vec::new();
        let graph = Arc::clone(&run.graph);
        for out in &graph.start {
            match *out {
                Out::Fixed(Target::Node(t)) => next.push(t),
                Out::Fixed(Target::End) | Out::Join(_) => {}
                Out::Cond(r) => {
                    if let Err(e) = route(&graph, r, &run.state, &mut next) {
                        return Err(RunError::new(e, Some(run.checkpoint(Vec::new()))));
                    }
                }
            }
        }
        next.sort_unstable();
        next.dedup();
        run.next = next;
        Ok(run)
    }

    fn resume(
        graph: Arc<Inner<S>>,
        checkpoint: Checkpoint<S>,
        limit: usize,
    ) -> Result<Self, RunError<S>> {
        let mismatch = |msg: String| RunError::new(GraphError::CheckpointMismatch(msg), None);
        let id = |name: &str| {
            graph
                .ids
                .get(name)
                .copied()
                .ok_or_else(|| mismatch(format!("unknown node `{name}`")))
        };
        let mut next = Vec::new();
        for name in &checkpoint.next {
            next.push(id(name)?);
        }
        next.sort_unstable();
        next.dedup();
        let mut joins: Vec<JoinState> = graph
            .joins
            .iter()
            .map(|j| JoinState {
                arrived: vec![false; j.sources.len()],
                count: 0,
            })
            .collect();
        for progress in &checkpoint.joins {
            let mut sources = Vec::new();
            for s in &progress.from {
                sources.push(id(s)?);
            }
            sources.sort_unstable();
            sources.dedup();
            let target = if progress.to == crate::END {
                Target::End
            } else {
                Target::Node(id(&progress.to)?)
            };
            let index = graph
                .joins
                .iter()
                .position(|j| j.sources == sources && j.target == target)
                .ok_or_else(|| {
                    mismatch(format!(
                        "no join [{}] -> `{}`",
                        progress.from.join(", "),
                        progress.to
                    ))
                })?;
            for s in &progress.arrived {
                let sid = id(s)?;
                let pos = sources
                    .binary_search(&sid)
                    .map_err(|_| mismatch(format!("`{s}` is not a source of its join")))?;
                let j = &mut joins[index];
                if !j.arrived[pos] {
                    j.arrived[pos] = true;
                    j.count += 1;
                }
            }
        }
        let mut pending = Vec::new();
        for w in checkpoint.pending_writes {
            let nid = id(&w.node)?;
            if next.binary_search(&nid).is_err() {
                return Err(mismatch(format!(
                    "pending write of `{}`, which is not due next",
                    w.node
                )));
            }
            pending.push((nid, w.update));
        }
        Ok(Run {
            state: Arc::new(checkpoint.state),
            next,
            joins,
            step: checkpoint.step,
            limit,
            pending,
            last_ran: Vec::new(),
            graph,
        })
    }

    async fn finish(mut self) -> Result<S, RunError<S>> {
        while let Outcome::Ran(_) = self.step(false).await? {}
        Ok(Arc::try_unwrap(self.state).unwrap_or_else(|shared| (*shared).clone()))
    }

    fn names(&self, ids: &[usize]) -> Vec<String> {
        ids.iter()
            .map(|&id| self.graph.nodes[id].name.clone())
            .collect()
    }

    fn join_progress(&self, joins: &[JoinState]) -> Vec<JoinProgress> {
        joins
            .iter()
            .zip(&self.graph.joins)
            .filter(|(state, _)| state.count > 0)
            .map(|(state, def)| JoinProgress {
                from: self.names(&def.sources),
                to: match def.target {
                    Target::Node(t) => self.graph.nodes[t].name.clone(),
                    Target::End => crate::END.to_string(),
                },
                arrived: def
                    .sources
                    .iter()
                    .zip(&state.arrived)
                    .filter(|(_, arrived)| **arrived)
                    .map(|(&s, _)| self.graph.nodes[s].name.clone())
                    .collect(),
            })
            .collect()
    }

    /// The checkpoint of the current (committed) position.
    fn checkpoint(&self, pending_writes: Vec<PendingWrite<S::Update>>) -> Checkpoint<S> {
        Checkpoint {
            step: self.step,
            state: (*self.state).clone(),
            next: self.names(&self.next),
            joins: self.join_progress(&self.joins),
            pending_writes,
        }
    }

    async fn step(&mut self, emit: bool) -> Result<Outcome<S>, RunError<S>> {
        if self.next.is_empty() {
            return Ok(Outcome::Done);
        }
        if self.step >= self.limit {
            let error = GraphError::RecursionLimit {
                limit: self.limit,
                last_ran: self.names(&self.last_ran),
                next: self.names(&self.next),
            };
            return Err(RunError::new(error, Some(self.checkpoint(Vec::new()))));
        }
        let step = self.step + 1;
        let graph = Arc::clone(&self.graph);

        // Run: every due node concurrently on one snapshot; pending writes stand in for nodes
        // that already succeeded before a resume.
        let mut results: Vec<Option<S::Update>> = self.next.iter().map(|_| None).collect();
        for (id, update) in std::mem::take(&mut self.pending) {
            if let Ok(i) = self.next.binary_search(&id) {
                results[i] = Some(update);
            }
        }
        let failure = {
            let mut running = FuturesUnordered::new();
            for (i, &id) in self.next.iter().enumerate() {
                if results[i].is_none() {
                    let node = &graph.nodes[id];
                    let snapshot = Arc::clone(&self.state);
                    running.push(run_node(node, snapshot, step).map(move |r| (i, r)));
                }
            }
            let mut failure = None;
            while let Some((i, result)) = running.next().await {
                match result {
                    Ok(update) => results[i] = Some(update),
                    Err((attempts, source)) => {
                        failure = Some((i, attempts, source));
                        break;
                    }
                }
            }
            if failure.is_some() {
                // Siblings that finished in the same instant keep their writes, so a resume
                // does not run them again; only those still in flight are cancelled.
                while let Some(Some((i, result))) = running.next().now_or_never() {
                    if let Ok(update) = result {
                        results[i] = Some(update);
                    }
                }
            }
            failure
            // Dropping `running` here cancels the siblings still in flight.
        };
        if let Some((i, attempts, source)) = failure {
            let pending = results
                .into_iter()
                .zip(&self.next)
                .filter_map(|(update, &id)| {
                    update.map(|update| PendingWrite {
                        node: graph.nodes[id].name.clone(),
                        update,
                    })
                })
                .collect();
            let error = GraphError::NodeFailed {
                node: graph.nodes[self.next[i]].name.clone(),
                step,
                attempts,
                source,
            };
            return Err(RunError::new(error, Some(self.checkpoint(pending))));
        }
        let updates: Vec<(usize, S::Update)> = self
            .next
            .iter()
            .copied()
            .zip(results.into_iter().map(Option::unwrap_or_default))
            .collect();

        // Commit, part 1: checks and routing, with nothing changed yet.
        let mut writers: Vec<(&'static str, usize)> = Vec::new();
        for (id, update) in &updates {
            let mut conflict = None;
            S::overwrite_keys(update, &mut |key| {
                if conflict.is_some() {
                    return;
                }
                match writers.iter().find(|(k, _)| *k == key) {
                    Some(&(_, first)) => conflict = Some((key, first)),
                    None => writers.push((key, *id)),
                }
            });
            if let Some((key, first)) = conflict {
                let error = GraphError::ConcurrentUpdate {
                    key,
                    first: graph.nodes[first].name.clone(),
                    second: graph.nodes[*id].name.clone(),
                    step,
                };
                return Err(RunError::new(error, Some(self.checkpoint(Vec::new()))));
            }
        }
        let mut next = Vec::new();
        let mut joins = self.joins.clone();
        for (id, update) in &updates {
            for out in &graph.out[*id] {
                match *out {
                    Out::Fixed(Target::Node(t)) => next.push(t),
                    Out::Fixed(Target::End) => {}
                    Out::Cond(r) => {
                        // The router sees the pre-step state plus this node's own update only.
                        let mut view = (*self.state).clone();
                        view.apply(update.clone());
                        if let Err(e) = route(&graph, r, &view, &mut next) {
                            return Err(RunError::new(e, Some(self.checkpoint(Vec::new()))));
                        }
                    }
                    Out::Join(j) => {
                        let def = &graph.joins[j];
                        let join = &mut joins[j];
                        if let Ok(pos) = def.sources.binary_search(id)
                            && !join.arrived[pos]
                        {
                            join.arrived[pos] = true;
                            join.count += 1;
                        }
                        if join.count == def.sources.len() {
                            join.arrived.fill(false);
                            join.count = 0;
                            if let Target::Node(t) = def.target {
                                next.push(t);
                            }
                        }
                    }
                }
            }
        }
        next.sort_unstable();
        next.dedup();

        // Commit, part 2: apply every write, in node-name order. Cannot fail.
        let event_updates = emit.then(|| {
            updates
                .iter()
                .map(|(id, u)| (graph.nodes[*id].name.clone(), u.clone()))
                .collect()
        });
        let state = Arc::make_mut(&mut self.state);
        for (_, update) in updates {
            state.apply(update);
        }
        self.joins = joins;
        self.last_ran = std::mem::replace(&mut self.next, next);
        self.step = step;
        tracing::debug!(step, ran = ?self.names(&self.last_ran), next = ?self.names(&self.next), "graph.step");

        Ok(Outcome::Ran(event_updates.map(|updates| StepEvent {
            step,
            ran: self.names(&self.last_ran),
            updates,
            next: self.names(&self.next),
            state: Arc::clone(&self.state),
            joins: self.join_progress(&self.joins),
        })))
    }
}

/// Runs router `r` on `view` and appends the node ids it picks to `next`.
fn route<S: State>(
    graph: &Inner<S>,
    r: usize,
    view: &S,
    next: &mut Vec<usize>,
) -> Result<(), GraphError> {
    let router = &graph.routers[r];
    for name in (router.func)(view).0 {
        match router.targets.iter().find(|(n, _)| **n == *name) {
            Some((_, Target::Node(t))) => next.push(*t),
            Some((_, Target::End)) => {}
            None => {
                return Err(GraphError::UnknownRoute {
                    node: router.source.clone(),
                    target: name.into_owned(),
                    declared: router.targets.iter().map(|(n, _)| n.clone()).collect(),
                });
            }
        }
    }
    Ok(())
}

/// Runs one node under its policy: attempts with a timeout each, backoff between them.
async fn run_node<S: State>(
    node: &NodeEntry<S>,
    state: Arc<S>,
    step: usize,
) -> Result<S::Update, (u32, AttemptError)> {
    let span = tracing::info_span!("graph.node", node = node.name.as_str(), step);
    async move {
        let policy = &node.policy;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let func = &node.func;
            let snapshot = Arc::clone(&state);
            // The call itself happens inside the future, so a panic before the first await is
            // caught too.
            let call = AssertUnwindSafe(async move { func(snapshot).await }).catch_unwind();
            let outcome = match policy.timeout {
                Some(limit) => match tokio::time::timeout(limit, call).await {
                    Ok(result) => flatten(result),
                    Err(_) => Err(AttemptError::TimedOut(limit)),
                },
                None => flatten(call.await),
            };
            let error = match outcome {
                Ok(update) => return Ok(update),
                Err(error) => error,
            };
            if !policy.retry.should_retry(attempt, &error) {
                tracing::warn!(attempt, error = %error, "graph node failed");
                return Err((attempt, error));
            }
            let delay = policy.retry.delay_after(attempt);
            tracing::warn!(attempt, ?delay, error = %error, "graph node attempt failed; retrying");
            tokio::time::sleep(delay).await;
        }
    }
    .instrument(span)
    .await
}

type Caught<U> = Result<Result<U, crate::policy::BoxError>, Box<dyn std::any::Any + Send>>;

fn flatten<U>(caught: Caught<U>) -> Result<U, AttemptError> {
    match caught {
        Ok(Ok(update)) => Ok(update),
        Ok(Err(error)) => Err(AttemptError::Failed(error)),
        Err(panic) => Err(AttemptError::Panicked(panic_message(panic.as_ref()))),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
