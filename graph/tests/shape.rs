//! Introspection (nodes, edges, Mermaid) and compile-time validation.

mod common;

use common::{S, logs};
use firstline_graph::{BuildError, CompiledGraph, END, Edge, GraphBuilder, START};

/// The incident graph's shape, with no-op nodes.
fn incident() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    for name in ["investigate", "recall", "summarise", "judge", "ask"] {
        g.add_node(name, logs(name));
    }
    g.add_edge(START, "investigate")
        .add_edge(START, "recall")
        .add_join(["investigate", "recall"], "summarise")
        .add_edge("summarise", "judge")
        .add_conditional_edges("judge", [END, "ask"], |_s: &S| END)
        .add_edge("ask", END);
    g.compile().expect("the incident graph is valid")
}

#[test]
fn incident_graph_renders_as_this_exact_mermaid() {
    let expected = "\
graph TD
    __start__([START])
    investigate[investigate]
    recall[recall]
    summarise[summarise]
    judge[judge]
    ask[ask]
    __end__([END])
    __start__ --> investigate
    __start__ --> recall
    investigate & recall -->|join| summarise
    summarise --> judge
    judge -.-> __end__
    judge -.-> ask
    ask --> __end__
";
    assert_eq!(incident().mermaid(), expected);
}

#[test]
fn incident_graph_lists_its_nodes_and_edges() {
    let graph = incident();
    assert_eq!(
        graph.nodes(),
        ["investigate", "recall", "summarise", "judge", "ask"]
    );
    let s = |x: &str| x.to_string();
    assert_eq!(
        graph.edges(),
        [
            Edge::Fixed {
                from: s(START),
                to: s("investigate")
            },
            Edge::Fixed {
                from: s(START),
                to: s("recall")
            },
            Edge::Join {
                from: vec![s("investigate"), s("recall")],
                to: s("summarise")
            },
            Edge::Fixed {
                from: s("summarise"),
                to: s("judge")
            },
            Edge::Conditional {
                from: s("judge"),
                targets: vec![s(END), s("ask")]
            },
            Edge::Fixed {
                from: s("ask"),
                to: s(END)
            },
        ]
    );
}

#[tokio::test]
async fn incident_graph_runs_branches_in_parallel_then_join_then_judge() {
    let done = incident().invoke(S::default(), 4).await.expect("run");
    assert_eq!(done.log, ["investigate", "recall", "summarise", "judge"]);
}

fn build(f: impl FnOnce(&mut GraphBuilder<S>)) -> Result<CompiledGraph<S>, BuildError> {
    let mut g = GraphBuilder::<S>::new();
    f(&mut g);
    g.compile()
}

#[test]
fn duplicate_node_names_are_rejected() {
    let err = build(|g| {
        g.add_node("a", logs("a"))
            .add_node("a", logs("a"))
            .add_edge(START, "a")
            .add_edge("a", END);
    })
    .expect_err("duplicate");
    assert_eq!(err, BuildError::DuplicateNode("a".into()));
}

#[test]
fn reserved_and_malformed_names_are_rejected() {
    for bad in ["", "__end__", "has space", "a-b"] {
        let err = build(|g| {
            g.add_node(bad, logs("x"))
                .add_edge(START, bad)
                .add_edge(bad, END);
        })
        .expect_err("invalid name");
        assert_eq!(err, BuildError::InvalidName(bad.into()));
    }
}

#[test]
fn edges_to_unknown_nodes_are_rejected() {
    let err = build(|g| {
        g.add_node("a", logs("a"))
            .add_edge(START, "a")
            .add_edge("a", "missing");
    })
    .expect_err("unknown target");
    assert!(matches!(&err, BuildError::UnknownNode { node, .. } if node == "missing"));
    assert!(err.to_string().contains("`a` -> `missing`"), "{err}");

    let err = build(|g| {
        g.add_node("a", logs("a"))
            .add_edge(START, "a")
            .add_conditional_edges("a", ["ghost", END], |_s: &S| END);
    })
    .expect_err("unknown router target");
    assert!(matches!(&err, BuildError::UnknownNode { node, .. } if node == "ghost"));

    let err = build(|g| {
        g.add_node("a", logs("a"))
            .add_edge(START, "a")
            .add_join(["a", "phantom"], END);
    })
    .expect_err("unknown join source");
    assert!(matches!(&err, BuildError::UnknownNode { node, .. } if node == "phantom"));
}

#[test]
fn unreachable_nodes_are_rejected() {
    let err = build(|g| {
        g.add_node("a", logs("a"))
            .add_node("island", logs("island"))
            .add_edge(START, "a")
            .add_edge("a", END)
            .add_edge("island", END);
    })
    .expect_err("unreachable");
    assert_eq!(err, BuildError::Unreachable("island".into()));
}

#[test]
fn a_join_whose_source_is_unreachable_makes_its_target_unreachable() {
    let err = build(|g| {
        g.add_node("a", logs("a"))
            .add_node("never", logs("never"))
            .add_node("c", logs("c"))
            .add_edge(START, "a")
            .add_edge("never", END)
            .add_join(["a", "never"], "c")
            .add_edge("c", END);
    })
    .expect_err("unreachable");
    assert!(matches!(err, BuildError::Unreachable(ref n) if n == "never" || n == "c"));
}

#[test]
fn nodes_with_no_path_to_end_are_rejected() {
    let err = build(|g| {
        g.add_node("a", logs("a"))
            .add_node("dead_end", logs("dead_end"))
            .add_edge(START, "a")
            .add_edge("a", "dead_end")
            .add_edge("a", END);
    })
    .expect_err("dead end");
    assert_eq!(err, BuildError::NoPathToEnd("dead_end".into()));

    let err = build(|g| {
        g.add_node("a", logs("a"))
            .add_node("b", logs("b"))
            .add_edge(START, "a")
            .add_edge("a", "b")
            .add_edge("b", "a");
    })
    .expect_err("cycle without exit");
    assert_eq!(err, BuildError::NoPathToEnd("a".into()));
}

#[test]
fn a_graph_without_entry_is_rejected() {
    let err = build(|g| {
        g.add_node("a", logs("a")).add_edge("a", END);
    })
    .expect_err("no entry");
    assert_eq!(err, BuildError::NoEntry);
}

#[test]
fn edges_out_of_end_or_into_start_are_rejected() {
    let err = build(|g| {
        g.add_node("a", logs("a"))
            .add_edge(START, "a")
            .add_edge("a", END)
            .add_edge(END, "a");
    })
    .expect_err("edge from END");
    assert!(matches!(err, BuildError::InvalidEdge(_)));
}
