//! The compiled graph: a checked, immutable, cheaply clonable description of nodes and edges,
//! plus introspection (node and edge lists, Mermaid).
//!
//! Node ids are assigned in node-name order, so "in node-name order" inside the runtime is just
//! "in id order". Running is in [`crate::run`].

use std::collections::HashMap;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::builder::{END, Edge, Route, START};
use crate::policy::{BoxError, NodePolicy};
use crate::state::State;

pub(crate) type NodeFuture<U> = Pin<Box<dyn Future<Output = Result<U, BoxError>> + Send>>;
pub(crate) type NodeFn<S> = Arc<dyn Fn(Arc<S>) -> NodeFuture<<S as State>::Update> + Send + Sync>;

pub(crate) struct NodeEntry<S: State> {
    pub(crate) name: String,
    pub(crate) policy: NodePolicy,
    pub(crate) func: NodeFn<S>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Node(usize),
    End,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Out {
    Fixed(Target),
    Cond(usize),
    Join(usize),
}

pub(crate) struct Router<S> {
    pub(crate) source: String,
    pub(crate) func: Arc<dyn Fn(&S) -> Route + Send + Sync>,
    pub(crate) targets: Vec<(String, Target)>,
}

pub(crate) struct JoinDef {
    /// Source ids, sorted.
    pub(crate) sources: Vec<usize>,
    pub(crate) target: Target,
}

pub(crate) struct Inner<S: State> {
    /// By id (name order).
    pub(crate) nodes: Vec<NodeEntry<S>>,
    /// Ids in insertion order.
    pub(crate) order: Vec<usize>,
    pub(crate) ids: HashMap<String, usize>,
    pub(crate) start: Vec<Out>,
    /// Outgoing edges per node id.
    pub(crate) out: Vec<Vec<Out>>,
    pub(crate) routers: Vec<Router<S>>,
    pub(crate) joins: Vec<JoinDef>,
    pub(crate) edges: Vec<Edge>,
}

/// A checked graph, ready to run. Cloning is cheap (an `Arc`); runs are independent.
pub struct CompiledGraph<S: State> {
    pub(crate) inner: Arc<Inner<S>>,
}

impl<S: State> Clone for CompiledGraph<S> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<S: State> std::fmt::Debug for CompiledGraph<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("nodes", &self.nodes())
            .field("edges", &self.inner.edges)
            .finish()
    }
}

impl<S: State> CompiledGraph<S> {
    pub(crate) fn from_inner(inner: Inner<S>) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Node names, in the order they were added.
    pub fn nodes(&self) -> Vec<&str> {
        self.inner
            .order
            .iter()
            .map(|&id| self.inner.nodes[id].name.as_str())
            .collect()
    }

    /// Edges, in the order they were declared.
    pub fn edges(&self) -> &[Edge] {
        &self.inner.edges
    }

    /// The policy of node `name`, if it exists.
    pub fn policy(&self, name: &str) -> Option<&NodePolicy> {
        self.inner
            .ids
            .get(name)
            .map(|&id| &self.inner.nodes[id].policy)
    }

    /// Renders the graph as a Mermaid flowchart (`graph TD`).
    ///
    /// Nodes come in insertion order between `__start__` and `__end__`; edges in declaration
    /// order. Fixed edges are `-->`, conditional edges dotted `-.->` (one line per target), and
    /// a join is `a & b -->|join| c`.
    pub fn mermaid(&self) -> String {
        let mut s = String::from("graph TD\n");
        let _ = writeln!(s, "    {START}([START])");
        for name in self.nodes() {
            let _ = writeln!(s, "    {name}[{name}]");
        }
        let _ = writeln!(s, "    {END}([END])");
        for edge in &self.inner.edges {
            match edge {
                Edge::Fixed { from, to } => {
                    let _ = writeln!(s, "    {from} --> {to}");
                }
                Edge::Conditional { from, targets } => {
                    for to in targets {
                        let _ = writeln!(s, "    {from} -.-> {to}");
                    }
                }
                Edge::Join { from, to } => {
                    let _ = writeln!(s, "    {} -->|join| {to}", from.join(" & "));
                }
            }
        }
        s
    }
}
