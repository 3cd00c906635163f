//! Property: on a random DAG, random node delays never change the final state.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{S, U};
use firstline_graph::{CompiledGraph, END, GraphBuilder, START};
use proptest::prelude::*;

const NAMES: [&str; 8] = ["n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"];

/// A DAG over `n` nodes: edge i → j (i < j) where `edges[i][j]`; nodes without a predecessor
/// hang off START, nodes without a successor go to END. `joins` turns a node's incoming edges
/// into one join instead of plain edges.
fn build(n: usize, edges: &[Vec<bool>], joins: &[bool], delays: &[u64]) -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    for (i, name) in NAMES.iter().enumerate().take(n) {
        let delay = delays[i];
        let value = (i as u64 + 1) * 7;
        g.add_node(*name, move |s: Arc<S>| async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            // Depends on what this node sees, so visibility bugs change the result.
            let seen = s.log.len();
            Ok(U::default()
                .log(vec![format!("{name}@{seen}")])
                .total(value))
        });
    }
    for j in 0..n {
        let preds: Vec<usize> = (0..j).filter(|&i| edges[i][j]).collect();
        if preds.is_empty() {
            g.add_edge(START, NAMES[j]);
        } else if joins[j] {
            g.add_join(preds.iter().map(|&i| NAMES[i]), NAMES[j]);
        } else {
            for &i in &preds {
                g.add_edge(NAMES[i], NAMES[j]);
            }
        }
    }
    for i in 0..n {
        if !(i + 1..n).any(|j| edges[i][j]) {
            g.add_edge(NAMES[i], END);
        }
    }
    g.compile()
        .expect("a DAG with START and END edges is valid")
}

fn run(graph: &CompiledGraph<S>) -> S {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(graph.invoke(S::default(), 100))
        .expect("a DAG of 8 nodes finishes within 100 steps")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_dags_with_random_delays_give_identical_final_state(
        n in 2usize..=8,
        edges in prop::collection::vec(prop::collection::vec(any::<bool>(), 8), 8),
        joins in prop::collection::vec(any::<bool>(), 8),
        delays_a in prop::collection::vec(0u64..40, 8),
        delays_b in prop::collection::vec(0u64..40, 8),
    ) {
        let first = run(&build(n, &edges, &joins, &delays_a));
        let second = run(&build(n, &edges, &joins, &delays_b));
        let zero = run(&build(n, &edges, &joins, &[0; 8]));
        prop_assert_eq!(&first, &second);
        prop_assert_eq!(&first, &zero);
        prop_assert!(!first.log.is_empty());
    }
}
