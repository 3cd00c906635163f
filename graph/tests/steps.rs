//! Super-step semantics: reducers, concurrency, visibility, edges, joins, routers, limits.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{S, U, count, counted, counter, logs, logs_after};
use firstline_graph::{END, GraphBuilder, GraphError, START};
use futures::StreamExt;

#[tokio::test]
async fn concurrent_overwrite_is_an_error_naming_key_and_both_nodes() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("b_writer", |_s: Arc<S>| async {
        Ok(U::default().summary(Some("from b".into())))
    })
    .add_node("a_writer", |_s: Arc<S>| async {
        Ok(U::default()
            .summary(Some("from a".into()))
            .log(vec!["a".into()]))
    })
    .add_edge(START, "a_writer")
    .add_edge(START, "b_writer")
    .add_edge("a_writer", END)
    .add_edge("b_writer", END);
    let graph = g.compile().expect("valid graph");

    let err = graph
        .invoke(S::default(), 5)
        .await
        .expect_err("two writes to an overwrite key must fail");
    match &err.error {
        GraphError::ConcurrentUpdate {
            key,
            first,
            second,
            step,
        } => {
            assert_eq!(*key, "summary");
            assert_eq!(first, "a_writer");
            assert_eq!(second, "b_writer");
            assert_eq!(*step, 1);
        }
        other => panic!("unexpected error {other:?}"),
    }
    let message = err.to_string();
    for word in ["summary", "a_writer", "b_writer"] {
        assert!(message.contains(word), "{message} lacks {word}");
    }
    // All or nothing: a_writer's append was not applied either.
    let checkpoint = err.checkpoint.expect("checkpoint");
    assert_eq!(checkpoint.state, S::default());
}

#[tokio::test]
async fn append_and_fold_accept_parallel_writes() {
    let mut g = GraphBuilder::<S>::new();
    for name in ["p", "q", "r"] {
        g.add_node(name, move |_s: Arc<S>| async move {
            Ok(U::default().log(vec![name.to_string()]).total(2))
        })
        .add_edge(START, name)
        .add_edge(name, END);
    }
    let done = g
        .compile()
        .expect("valid")
        .invoke(S::default(), 5)
        .await
        .expect("run");
    assert_eq!(done.log, ["p", "q", "r"]);
    assert_eq!(done.total, 6);
}

/// Tiny deterministic generator for delays.
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

#[tokio::test(start_paused = true)]
async fn append_order_is_node_name_order_regardless_of_completion_order() {
    const NAMES: [&str; 8] = ["n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"];
    // Seed 0 is the adversarial case: n0 slowest, n7 fastest (completion order reversed).
    for seed in 0..6u64 {
        let mut rng = seed;
        let mut g = GraphBuilder::<S>::new();
        // Insert in a scrambled order too.
        for (i, name) in NAMES.iter().rev().enumerate() {
            let delay = if seed == 0 {
                (i as u64 + 1) * 10
            } else {
                lcg(&mut rng) % 50
            };
            g.add_node(*name, logs_after(name, delay))
                .add_edge(START, *name)
                .add_edge(*name, END);
        }
        let done = g
            .compile()
            .expect("valid")
            .invoke(S::default(), 3)
            .await
            .expect("run");
        assert_eq!(done.log, NAMES, "seed {seed}");
    }
}

#[tokio::test(start_paused = true)]
async fn writes_are_invisible_to_siblings_within_a_step() {
    let seen_by_late_sibling = Arc::new(Mutex::new(None));
    let seen_next_step = Arc::new(Mutex::new(None));
    let (late, next) = (seen_by_late_sibling.clone(), seen_next_step.clone());
    let mut g = GraphBuilder::<S>::new();
    g.add_node("fast", |_s: Arc<S>| async { Ok(U::default().x(1)) })
        .add_node("slow", move |s: Arc<S>| {
            let late = late.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                *late.lock().expect("lock") = Some(s.x);
                Ok(U::default())
            }
        })
        .add_node("after", move |s: Arc<S>| {
            *next.lock().expect("lock") = Some(s.x);
            async { Ok(U::default()) }
        })
        .add_edge(START, "fast")
        .add_edge(START, "slow")
        .add_join(["fast", "slow"], "after")
        .add_edge("after", END);
    let done = g
        .compile()
        .expect("valid")
        .invoke(S::default(), 5)
        .await
        .expect("run");
    assert_eq!(done.x, 1);
    assert_eq!(*seen_by_late_sibling.lock().expect("lock"), Some(0));
    assert_eq!(*seen_next_step.lock().expect("lock"), Some(1));
}

#[tokio::test(start_paused = true)]
async fn nodes_of_a_step_run_concurrently() {
    // Each node waits for the other: run one after the other, they would never finish.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let mut g = GraphBuilder::<S>::new();
    for name in ["left", "right"] {
        let barrier = barrier.clone();
        g.add_node(name, move |_s: Arc<S>| {
            let barrier = barrier.clone();
            async move {
                barrier.wait().await;
                Ok(U::default().log(vec![name.to_string()]))
            }
        })
        .add_edge(START, name)
        .add_edge(name, END);
    }
    let graph = g.compile().expect("valid");
    let done = tokio::time::timeout(Duration::from_secs(60), graph.invoke(S::default(), 3))
        .await
        .expect("parallel nodes must not deadlock")
        .expect("run");
    assert_eq!(done.log, ["left", "right"]);
}

/// START → a; START → b1 → b2; join [a, b2] → c.
fn unequal_branches(g: &mut GraphBuilder<S>, c_calls: Arc<std::sync::atomic::AtomicUsize>) {
    g.add_node("a", logs("a"))
        .add_node("b1", logs("b1"))
        .add_node("b2", logs("b2"))
        .add_node("c", counted("c", c_calls))
        .add_edge(START, "a")
        .add_edge(START, "b1")
        .add_edge("b1", "b2");
}

#[tokio::test]
async fn join_runs_once_with_unequal_branch_lengths() {
    let c_calls = counter();
    let mut g = GraphBuilder::<S>::new();
    unequal_branches(&mut g, c_calls.clone());
    g.add_join(["a", "b2"], "c").add_edge("c", END);
    let graph = g.compile().expect("valid");
    let ran: Vec<Vec<String>> = graph
        .stream(S::default(), 10)
        .map(|e| e.expect("step").ran)
        .collect()
        .await;
    assert_eq!(ran, [vec!["a", "b1"], vec!["b2"], vec!["c"]]);
    assert_eq!(count(&c_calls), 1);
}

#[tokio::test]
async fn join_resets_after_firing_so_it_works_twice_in_a_loop() {
    let c_calls = counter();
    let mut g = GraphBuilder::<S>::new();
    unequal_branches(&mut g, c_calls.clone());
    g.add_join(["a", "b2"], "c")
        .add_conditional_edges("c", ["a", "b1", END], |s: &S| {
            let rounds = s.log.iter().filter(|l| *l == "c").count();
            if rounds < 2 {
                vec!["a", "b1"]
            } else {
                vec![END]
            }
        });
    let graph = g.compile().expect("valid");
    let ran: Vec<Vec<String>> = graph
        .stream(S::default(), 10)
        .map(|e| e.expect("step").ran)
        .collect()
        .await;
    // Without the reset, the second `a` would fire c one step early (with a stale b2).
    assert_eq!(
        ran,
        [
            vec!["a", "b1"],
            vec!["b2"],
            vec!["c"],
            vec!["a", "b1"],
            vec!["b2"],
            vec!["c"],
        ]
    );
    assert_eq!(count(&c_calls), 2);
}

#[tokio::test]
async fn two_plain_edges_with_unequal_branches_run_the_target_twice() {
    // Documented LangGraph behaviour: use a join to run the target once.
    let c_calls = counter();
    let mut g = GraphBuilder::<S>::new();
    unequal_branches(&mut g, c_calls.clone());
    g.add_edge("a", "c").add_edge("b2", "c").add_edge("c", END);
    let done = g
        .compile()
        .expect("valid")
        .invoke(S::default(), 10)
        .await
        .expect("run");
    assert_eq!(count(&c_calls), 2);
    assert_eq!(done.log, ["a", "b1", "b2", "c", "c"]);
}

#[tokio::test]
async fn router_sees_pre_step_state_plus_its_own_update_only() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_in_router = seen.clone();
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", |_s: Arc<S>| async { Ok(U::default().x(1)) })
        .add_node("b", |_s: Arc<S>| async { Ok(U::default().y(1)) })
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_conditional_edges("a", [END], move |s: &S| {
            seen_in_router.lock().expect("lock").push((s.x, s.y));
            END
        })
        .add_edge("b", END);
    let done = g
        .compile()
        .expect("valid")
        .invoke(
            S {
                x: 0,
                y: 0,
                ..S::default()
            },
            5,
        )
        .await
        .expect("run");
    assert_eq!((done.x, done.y), (1, 1));
    // Own write (x = 1) visible; sibling b's write (y = 1) not.
    assert_eq!(*seen.lock().expect("lock"), [(1, 0)]);
}

#[tokio::test]
async fn router_can_pick_several_nodes_to_run_in_parallel() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("fork", logs("fork"))
        .add_node("p", logs("p"))
        .add_node("q", logs("q"))
        .add_node("r", logs("r"))
        .add_edge(START, "fork")
        .add_conditional_edges("fork", ["p", "q", "r"], |_s: &S| vec!["q", "p"])
        .add_edge("p", END)
        .add_edge("q", END)
        .add_edge("r", END);
    let ran: Vec<Vec<String>> = g
        .compile()
        .expect("valid")
        .stream(S::default(), 5)
        .map(|e| e.expect("step").ran)
        .collect()
        .await;
    assert_eq!(ran, [vec!["fork"], vec!["p", "q"]]);
}

#[tokio::test]
async fn router_returning_an_undeclared_name_is_a_clear_error() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", logs("a"))
        .add_node("b", logs("b"))
        .add_edge(START, "a")
        .add_conditional_edges("a", ["b", END], |_s: &S| "nowhere")
        .add_edge("b", END);
    let err = g
        .compile()
        .expect("valid")
        .invoke(S::default(), 5)
        .await
        .expect_err("unknown route");
    match &err.error {
        GraphError::UnknownRoute {
            node,
            target,
            declared,
        } => {
            assert_eq!(node, "a");
            assert_eq!(target, "nowhere");
            assert_eq!(declared, &["b", END]);
        }
        other => panic!("unexpected error {other:?}"),
    }
    // Nothing of the failed step was applied.
    assert_eq!(
        err.checkpoint.expect("checkpoint").state.log,
        Vec::<String>::new()
    );
}

fn chain(calls: Arc<std::sync::atomic::AtomicUsize>) -> firstline_graph::CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    for name in ["a", "b", "c"] {
        g.add_node(name, counted(name, calls.clone()));
    }
    g.add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END);
    g.compile().expect("valid")
}

#[tokio::test]
async fn recursion_limit_allows_exactly_limit_steps() {
    let calls = counter();
    let done = chain(calls.clone())
        .invoke(S::default(), 3)
        .await
        .expect("3 steps fit a limit of 3");
    assert_eq!(done.log, ["a", "b", "c"]);
    assert_eq!(count(&calls), 3);
}

#[tokio::test]
async fn recursion_limit_fails_before_running_the_extra_step() {
    let calls = counter();
    let err = chain(calls.clone())
        .invoke(S::default(), 2)
        .await
        .expect_err("3 steps do not fit a limit of 2");
    // Exactly two steps ran: c's side effect never happened.
    assert_eq!(count(&calls), 2);
    match &err.error {
        GraphError::RecursionLimit {
            limit,
            last_ran,
            next,
        } => {
            assert_eq!(*limit, 2);
            assert_eq!(last_ran, &["b"]);
            assert_eq!(next, &["c"]);
        }
        other => panic!("unexpected error {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("limit of 2") && message.contains('b'),
        "{message}"
    );
    let checkpoint = err.checkpoint.expect("checkpoint");
    assert_eq!(checkpoint.step, 2);
    assert_eq!(checkpoint.state.log, ["a", "b"]);
}

#[tokio::test]
async fn a_parallel_step_counts_once_against_the_limit() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", logs("a"))
        .add_node("b", logs("b"))
        .add_node("c", logs("c"))
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_join(["a", "b"], "c")
        .add_edge("c", END);
    let done = g
        .compile()
        .expect("valid")
        .invoke(S::default(), 2)
        .await
        .expect("two steps");
    assert_eq!(done.log, ["a", "b", "c"]);
}
