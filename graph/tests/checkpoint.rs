//! Streaming, checkpoints and resume.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{S, U, count, counted, counter, logs};
use firstline_graph::{Checkpoint, END, GraphBuilder, GraphError, START};
use futures::StreamExt;

#[tokio::test]
async fn stream_yields_one_event_per_super_step() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", logs("a"))
        .add_node("b", |_s: Arc<S>| async { Ok(U::default().x(7)) })
        .add_node("c", logs("c"))
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_join(["a", "b"], "c")
        .add_edge("c", END);
    let graph = g.compile().expect("valid");
    let events: Vec<_> = graph
        .stream(S::default(), 5)
        .map(|e| e.expect("step"))
        .collect()
        .await;
    assert_eq!(events.len(), 2);

    assert_eq!(events[0].step, 1);
    assert_eq!(events[0].ran, ["a", "b"]);
    assert_eq!(events[0].next, ["c"]);
    let names: Vec<&str> = events[0].updates.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(events[0].updates[1].1, U::default().x(7));
    assert_eq!(events[0].state.x, 7);
    assert_eq!(events[0].state.log, ["a"]);

    assert_eq!(events[1].step, 2);
    assert_eq!(events[1].ran, ["c"]);
    assert!(events[1].next.is_empty());
    assert_eq!(events[1].state.log, ["a", "c"]);
    assert!(events[1].checkpoint().is_finished());
}

/// START → a ∥ b (b fails on its first call, after a finished) → join → c → END.
fn fails_once(
    a_calls: Arc<AtomicUsize>,
    b_calls: Arc<AtomicUsize>,
    c_calls: Arc<AtomicUsize>,
) -> firstline_graph::CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", move |_s: Arc<S>| {
        a_calls.fetch_add(1, Ordering::SeqCst);
        async { Ok(U::default().log(vec!["a".into()]).total(1)) }
    })
    .add_node("b", move |_s: Arc<S>| {
        let n = b_calls.fetch_add(1, Ordering::SeqCst);
        async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            if n == 0 {
                return Err("transient".into());
            }
            Ok(U::default().log(vec!["b".into()]).total(10))
        }
    })
    .add_node("c", counted("c", c_calls))
    .add_edge(START, "a")
    .add_edge(START, "b")
    .add_join(["a", "b"], "c")
    .add_edge("c", END);
    g.compile().expect("valid")
}

#[tokio::test(start_paused = true)]
async fn resume_after_a_failed_step_reruns_only_the_failed_node() {
    let (a, b, c) = (counter(), counter(), counter());
    let graph = fails_once(a.clone(), b.clone(), c.clone());
    let err = graph
        .invoke(S::default(), 5)
        .await
        .expect_err("b fails the first time");
    assert!(matches!(&err.error, GraphError::NodeFailed { node, .. } if node == "b"));
    let checkpoint = *err.checkpoint.expect("checkpoint");
    assert_eq!(checkpoint.step, 0);
    assert_eq!(checkpoint.next, ["a", "b"]);
    let pending: Vec<&str> = checkpoint
        .pending_writes
        .iter()
        .map(|w| w.node.as_str())
        .collect();
    assert_eq!(pending, ["a"]);

    // As a retried activity would: through storage, then resume.
    let stored = serde_json::to_string(&checkpoint).expect("serialise");
    let restored: Checkpoint<S> = serde_json::from_str(&stored).expect("deserialise");
    let done = graph.resume(restored, 5).await.expect("resumed run");

    assert_eq!(count(&a), 1, "a's write came from the pending writes");
    assert_eq!(count(&b), 2);
    assert_eq!(count(&c), 1);
    assert_eq!(done.log, ["a", "b", "c"]);
    assert_eq!(done.total, 11);
}

#[tokio::test]
async fn a_sibling_ready_when_the_failure_lands_keeps_its_write() {
    // `a` fails on its first poll; `b` would finish on its first poll too, but is polled after
    // `a`. Its work is done by the time the step gives up, so it must not run again on resume.
    let b_runs = counter();
    let fail_once = counter();
    let mut g = GraphBuilder::<S>::new();
    let (b_runs_in_node, fails) = (b_runs.clone(), fail_once.clone());
    g.add_node("a", move |_s: Arc<S>| {
        let fails = fails.clone();
        async move {
            if fails.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err("transient".into());
            }
            Ok(U::default().log(vec!["a".into()]))
        }
    })
    .add_node("b", move |_s: Arc<S>| {
        let runs = b_runs_in_node.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(U::default().log(vec!["b".into()]))
        }
    })
    .add_edge(START, "a")
    .add_edge(START, "b")
    .add_edge("a", END)
    .add_edge("b", END);
    let graph = g.compile().expect("valid");
    let err = graph
        .invoke(S::default(), 3)
        .await
        .expect_err("a fails once");
    let checkpoint = *err.checkpoint.expect("checkpoint");
    let pending: Vec<&str> = checkpoint
        .pending_writes
        .iter()
        .map(|w| w.node.as_str())
        .collect();
    assert_eq!(pending, ["b"]);
    let done = graph.resume(checkpoint, 3).await.expect("resumed");
    assert_eq!(count(&b_runs), 1, "b's write came from the pending writes");
    assert_eq!(done.log, ["a", "b"]);
}

#[tokio::test]
async fn checkpoint_round_trips_through_serde_json_and_resumes_mid_run() {
    // Unequal branches, so the checkpoint after step 1 holds join progress.
    let c_calls = counter();
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", |_s: Arc<S>| async {
        Ok(U::default()
            .log(vec!["a".into()])
            .summary(Some("s".into()))
            .total(3))
    })
    .add_node("b1", logs("b1"))
    .add_node("b2", logs("b2"))
    .add_node("c", counted("c", c_calls.clone()))
    .add_edge(START, "a")
    .add_edge(START, "b1")
    .add_edge("b1", "b2")
    .add_join(["a", "b2"], "c")
    .add_edge("c", END);
    let graph = g.compile().expect("valid");

    let first = graph
        .stream(S::default(), 10)
        .next()
        .await
        .expect("an event")
        .expect("step 1");
    let checkpoint = first.checkpoint();
    assert_eq!(checkpoint.step, 1);
    assert_eq!(checkpoint.next, ["b2"]);
    assert_eq!(checkpoint.joins.len(), 1);
    assert_eq!(checkpoint.joins[0].arrived, ["a"]);

    let json = serde_json::to_value(&checkpoint).expect("serialise");
    let back: Checkpoint<S> = serde_json::from_value(json.clone()).expect("deserialise");
    assert_eq!(serde_json::to_value(&back).expect("serialise again"), json);
    assert_eq!(back.state, checkpoint.state);
    assert_eq!(back.joins, checkpoint.joins);

    let resumed = graph.resume(back, 10).await.expect("resume");
    let direct = graph.invoke(S::default(), 10).await.expect("invoke");
    assert_eq!(resumed, direct);
    assert_eq!(resumed.log, ["a", "b1", "b2", "c"]);
    // c ran once in the resumed run and once in the direct run: the join kept a's arrival.
    assert_eq!(count(&c_calls), 2);
}

#[tokio::test]
async fn resumed_steps_count_against_the_recursion_limit() {
    let calls = counter();
    let mut g = GraphBuilder::<S>::new();
    for name in ["a", "b", "c"] {
        g.add_node(name, counted(name, calls.clone()));
    }
    g.add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END);
    let graph = g.compile().expect("valid");
    let first = graph
        .stream(S::default(), 3)
        .next()
        .await
        .expect("event")
        .expect("step");
    let err = graph
        .resume(first.checkpoint(), 2)
        .await
        .expect_err("1 + 2 steps exceed 2");
    assert!(matches!(
        err.error,
        GraphError::RecursionLimit { limit: 2, .. }
    ));
    assert_eq!(count(&calls), 2);
}

#[tokio::test]
async fn a_checkpoint_from_another_graph_is_rejected() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", logs("a"))
        .add_edge(START, "a")
        .add_edge("a", END);
    let graph = g.compile().expect("valid");
    let checkpoint = Checkpoint::<S> {
        step: 1,
        state: S::default(),
        next: vec!["ghost".into()],
        joins: Vec::new(),
        pending_writes: Vec::new(),
    };
    let err = graph.resume(checkpoint, 5).await.expect_err("mismatch");
    assert!(matches!(err.error, GraphError::CheckpointMismatch(ref m) if m.contains("ghost")));
}
