//! Building a graph: nodes, edges, and the checks `compile()` makes.
//!
//! A graph is a set of named nodes (async functions from a state snapshot to an update) and
//! three kinds of edges:
//!
//! - **fixed** `a → b`: when `a` finishes a step, `b` runs in the next one;
//! - **conditional** `a → router`: the router sees the state as of the start of `a`'s step with
//!   `a`'s own update applied (not its siblings'), and returns one or more of its declared
//!   targets (they run in parallel in the next step) or [`END`];
//! - **join** `[a, b] → c`: `c` runs once, in the step after the last of `a`, `b` finished, and
//!   the join resets when it fires, so it works again in a loop. Two *fixed* edges `a → c`,
//!   `b → c` instead run `c` once per arriving branch when the branches have different lengths
//!   (LangGraph does the same).
//!
//! [`GraphBuilder::compile`] rejects duplicate or invalid names, edges to unknown nodes, nodes
//! that cannot be reached from [`START`] and nodes with no path to [`END`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use crate::error::BuildError;
use crate::graph::{CompiledGraph, Inner, JoinDef, NodeEntry, NodeFn, Out, Router, Target};
use crate::policy::{BoxError, NodePolicy};
use crate::state::State;

/// The virtual node every run starts from.
pub const START: &str = "__start__";
/// The virtual node that ends a branch.
pub const END: &str = "__end__";

/// What a router returns: zero or more target names (or [`END`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Route(pub Vec<Cow<'static, str>>);

impl From<&'static str> for Route {
    fn from(name: &'static str) -> Self {
        Route(vec![Cow::Borrowed(name)])
    }
}

impl From<String> for Route {
    fn from(name: String) -> Self {
        Route(vec![Cow::Owned(name)])
    }
}

impl From<Vec<&'static str>> for Route {
    fn from(names: Vec<&'static str>) -> Self {
        Route(names.into_iter().map(Cow::Borrowed).collect())
    }
}

impl From<Vec<String>> for Route {
    fn from(names: Vec<String>) -> Self {
        Route(names.into_iter().map(Cow::Owned).collect())
    }
}

impl<const N: usize> From<[&'static str; N]> for Route {
    fn from(names: [&'static str; N]) -> Self {
        Route(names.into_iter().map(Cow::Borrowed).collect())
    }
}

/// An edge, as declared. [`CompiledGraph::edges`] lists them in declaration order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edge {
    /// `from → to`.
    Fixed {
        /// Source node or [`START`].
        from: String,
        /// Target node or [`END`].
        to: String,
    },
    /// `from → router → one or more of targets`.
    Conditional {
        /// Source node or [`START`].
        from: String,
        /// What the router may return (nodes or [`END`]).
        targets: Vec<String>,
    },
    /// `[from...] → to`, once all sources have finished.
    Join {
        /// The sources.
        from: Vec<String>,
        /// Target node or [`END`].
        to: String,
    },
}

type RouterFn<S> = Arc<dyn Fn(&S) -> Route + Send + Sync>;

/// Collects nodes and edges; [`compile`](Self::compile) checks them and returns a runnable graph.
pub struct GraphBuilder<S: State> {
    nodes: Vec<(String, NodePolicy, NodeFn<S>)>,
    edges: Vec<Edge>,
    routers: Vec<RouterFn<S>>,
}

impl<S: State> Default for GraphBuilder<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: State> GraphBuilder<S> {
    /// An empty graph.
    pub fn new() -> Self {
        Self {
            nodes: Vec::new(),
            edges: Vec::new(),
            routers: Vec::new(),
        }
    }

    /// Adds a node with the default policy (no timeout, no retry).
    ///
    /// A node is an async function of a snapshot of the state as of the start of its step; it
    /// returns a partial update and never sees its siblings' writes.
    pub fn add_node<F, Fut>(&mut self, name: impl Into<String>, node: F) -> &mut Self
    where
        F: Fn(Arc<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<S::Update, BoxError>> + Send + 'static,
    {
        self.add_node_with(name, NodePolicy::default(), node)
    }

    /// Adds a node with a timeout and retry policy.
    pub fn add_node_with<F, Fut>(
        &mut self,
        name: impl Into<String>,
        policy: NodePolicy,
        node: F,
    ) -> &mut Self
    where
        F: Fn(Arc<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<S::Update, BoxError>> + Send + 'static,
    {
        let f: NodeFn<S> = Arc::new(move |state| Box::pin(node(state)));
        self.nodes.push((name.into(), policy, f));
        self
    }

    /// Adds a fixed edge `from → to`. `from` may be [`START`], `to` may be [`END`].
    pub fn add_edge(&mut self, from: impl Into<String>, to: impl Into<String>) -> &mut Self {
        self.edges.push(Edge::Fixed {
            from: from.into(),
            to: to.into(),
        });
        self
    }

    /// Adds a conditional edge from `from`. After `from` runs, `router` sees the pre-step state
    /// with `from`'s own update applied and returns one or more of `targets` (or [`END`]);
    /// returning a name outside `targets` fails the run with
    /// [`GraphError::UnknownRoute`](crate::GraphError::UnknownRoute).
    pub fn add_conditional_edges<R, I, T>(
        &mut self,
        from: impl Into<String>,
        targets: I,
        router: R,
    ) -> &mut Self
    where
        R: Fn(&S) -> T + Send + Sync + 'static,
        T: Into<Route>,
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.edges.push(Edge::Conditional {
            from: from.into(),
            targets: targets.into_iter().map(Into::into).collect(),
        });
        self.routers.push(Arc::new(move |s| router(s).into()));
        self
    }

    /// Adds a join `[from...] → to`: `to` runs once after every source has finished, however
    /// many steps each branch takes, and the join resets when it fires.
    pub fn add_join<I>(&mut self, from: I, to: impl Into<String>) -> &mut Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.edges.push(Edge::Join {
            from: from.into_iter().map(Into::into).collect(),
            to: to.into(),
        });
        self
    }

    /// Checks the graph and returns the runnable form.
    pub fn compile(self) -> Result<CompiledGraph<S>, BuildError> {
        // Names: valid, unique. Ids are assigned in name order, so sorting ids sorts by name.
        let mut seen = HashMap::new();
        for (name, _, _) in &self.nodes {
            let valid = !name.is_empty()
                && !name.starts_with("__")
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !valid {
                return Err(BuildError::InvalidName(name.clone()));
            }
            if seen.insert(name.clone(), ()).is_some() {
                return Err(BuildError::DuplicateNode(name.clone()));
            }
        }
        let insertion: Vec<String> = self.nodes.iter().map(|(n, _, _)| n.clone()).collect();
        let mut nodes = self.nodes;
        nodes.sort_by(|a, b| a.0.cmp(&b.0));
        let ids: HashMap<String, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, (n, _, _))| (n.clone(), i))
            .collect();
        let n = nodes.len();

        let source = |name: &str, edge: &Edge| -> Result<Option<usize>, BuildError> {
            if name == START {
                return Ok(None);
            }
            if name == END {
                return Err(BuildError::InvalidEdge(format!(
                    "{} starts at END",
                    describe(edge)
                )));
            }
            ids.get(name)
                .copied()
                .map(Some)
                .ok_or_else(|| BuildError::UnknownNode {
                    node: name.to_string(),
                    edge: describe(edge),
                })
        };
        let target = |name: &str, edge: &Edge| -> Result<Target, BuildError> {
            if name == END {
                return Ok(Target::End);
            }
            if name == START {
                return Err(BuildError::InvalidEdge(format!(
                    "{} ends at START",
                    describe(edge)
                )));
            }
            ids.get(name)
                .copied()
                .map(Target::Node)
                .ok_or_else(|| BuildError::UnknownNode {
                    node: name.to_string(),
                    edge: describe(edge),
                })
        };

        let mut start = Vec::new();
        let mut out: Vec<Vec<Out>> = vec![Vec::new(); n];
        let mut routers = Vec::new();
        let mut joins = Vec::new();
        let mut router_fns = self.routers.into_iter();
        for edge in &self.edges {
            match edge {
                Edge::Fixed { from, to } => {
                    let t = target(to, edge)?;
                    match source(from, edge)? {
                        None => start.push(Out::Fixed(t)),
                        Some(f) => out[f].push(Out::Fixed(t)),
                    }
                }
                Edge::Conditional { from, targets } => {
                    let f = source(from, edge)?;
                    let Some(func) = router_fns.next() else {
                        unreachable!("one router per conditional edge");
                    };
                    if targets.is_empty() {
                        return Err(BuildError::InvalidEdge(format!(
                            "{} declares no targets",
                            describe(edge)
                        )));
                    }
                    let mut resolved = Vec::new();
                    for t in targets {
                        resolved.push((t.clone(), target(t, edge)?));
                    }
                    let index = routers.len();
                    routers.push(Router {
                        source: from.clone(),
                        func,
                        targets: resolved,
                    });
                    match f {
                        None => start.push(Out::Cond(index)),
                        Some(f) => out[f].push(Out::Cond(index)),
                    }
                }
                Edge::Join { from, to } => {
                    if from.is_empty() {
                        return Err(BuildError::InvalidEdge(format!(
                            "{} has no sources",
                            describe(edge)
                        )));
                    }
                    let t = target(to, edge)?;
                    let mut sources = Vec::new();
                    for s in from {
                        match source(s, edge)? {
                            None => {
                                return Err(BuildError::InvalidEdge(format!(
                                    "{}: START cannot be a join source",
                                    describe(edge)
                                )));
                            }
                            Some(id) if !sources.contains(&id) => sources.push(id),
                            Some(_) => {}
                        }
                    }
                    sources.sort_unstable();
                    let index = joins.len();
                    for &s in &sources {
                        out[s].push(Out::Join(index));
                    }
                    joins.push(JoinDef { sources, target: t });
                }
            }
        }
        if start.is_empty() {
            return Err(BuildError::NoEntry);
        }

        let successors = |outs: &[Out]| -> Vec<Target> {
            let mut v = Vec::new();
            for o in outs {
                match o {
                    Out::Fixed(t) => v.push(*t),
                    Out::Cond(r) => v.extend(routers[*r].targets.iter().map(|(_, t)| *t)),
                    Out::Join(j) => v.push(joins[*j].target),
                }
            }
            v
        };

        // Reachability from START, to a fixpoint: a join's target is reachable once all of its
        // sources are.
        let mut reachable = vec![false; n];
        let mut changed = true;
        let mut frontier: Vec<Target> = successors(&start);
        while changed {
            changed = false;
            while let Some(t) = frontier.pop() {
                if let Target::Node(id) = t
                    && !reachable[id]
                {
                    reachable[id] = true;
                    changed = true;
                    for o in &out[id] {
                        match o {
                            Out::Join(_) => {}
                            other => frontier.extend(successors(std::slice::from_ref(other))),
                        }
                    }
                }
            }
            for j in &joins {
                if j.sources.iter().all(|&s| reachable[s])
                    && let Target::Node(t) = j.target
                    && !reachable[t]
                {
                    frontier.push(j.target);
                    changed = true;
                }
            }
        }
        for name in &insertion {
            if !reachable[ids[name]] {
                return Err(BuildError::Unreachable(name.clone()));
            }
        }

        // Every node must be able to reach END.
        let mut to_end = vec![false; n];
        let mut changed = true;
        while changed {
            changed = false;
            for id in 0..n {
                if !to_end[id]
                    && successors(&out[id]).iter().any(|t| match t {
                        Target::End => true,
                        Target::Node(x) => to_end[*x],
                    })
                {
                    to_end[id] = true;
                    changed = true;
                }
            }
        }
        for name in &insertion {
            if !to_end[ids[name]] {
                return Err(BuildError::NoPathToEnd(name.clone()));
            }
        }

        let order = insertion.iter().map(|name| ids[name]).collect();
        let nodes = nodes
            .into_iter()
            .map(|(name, policy, func)| NodeEntry { name, policy, func })
            .collect();
        Ok(CompiledGraph::from_inner(Inner {
            nodes,
            order,
            ids,
            start,
            out,
            routers,
            joins,
            edges: self.edges,
        }))
    }
}

fn describe(edge: &Edge) -> String {
    match edge {
        Edge::Fixed { from, to } => format!("edge `{from}` -> `{to}`"),
        Edge::Conditional { from, targets } => {
            format!("conditional edge `{from}` -> [{}]", targets.join(", "))
        }
        Edge::Join { from, to } => format!("join [{}] -> `{to}`", from.join(", ")),
    }
}
