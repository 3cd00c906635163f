//! Per-node policy: timeouts, retries, backoff, cancellation of siblings.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::{S, U, count, counter, logs};
use firstline_graph::{
    AttemptError, CompiledGraph, END, GraphBuilder, GraphError, NodePolicy, RetryPolicy, START,
};

fn single(policy: NodePolicy, calls: Arc<AtomicUsize>, fail_first: usize) -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node_with("flaky", policy, move |_s: Arc<S>| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        async move {
            if n < fail_first {
                return Err(format!("failure {}", n + 1).into());
            }
            Ok(U::default().log(vec!["flaky".into()]))
        }
    })
    .add_edge(START, "flaky")
    .add_edge("flaky", END);
    g.compile().expect("valid")
}

#[tokio::test(start_paused = true)]
async fn timeout_then_retry_succeeds() {
    let calls = counter();
    let c = calls.clone();
    let mut g = GraphBuilder::<S>::new();
    let policy = NodePolicy::new().timeout(Duration::from_millis(50)).retry(
        RetryPolicy::attempts(3).backoff(Duration::from_millis(10), 2.0, Duration::from_secs(1)),
    );
    g.add_node_with("slow_once", policy, move |_s: Arc<S>| {
        let n = c.fetch_add(1, Ordering::SeqCst);
        async move {
            if n == 0 {
                // The first attempt hangs past its timeout.
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            Ok(U::default().log(vec!["done".into()]))
        }
    })
    .add_edge(START, "slow_once")
    .add_edge("slow_once", END);
    let done = g
        .compile()
        .expect("valid")
        .invoke(S::default(), 3)
        .await
        .expect("second attempt succeeds");
    assert_eq!(done.log, ["done"]);
    assert_eq!(count(&calls), 2);
}

#[tokio::test(start_paused = true)]
async fn timeout_without_retry_is_a_node_failure() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node_with(
        "hangs",
        NodePolicy::new().timeout(Duration::from_millis(50)),
        |_s: Arc<S>| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(U::default())
        },
    )
    .add_edge(START, "hangs")
    .add_edge("hangs", END);
    let err = g
        .compile()
        .expect("valid")
        .invoke(S::default(), 3)
        .await
        .expect_err("times out");
    assert!(matches!(
        err.error,
        GraphError::NodeFailed { ref node, attempts: 1, source: AttemptError::TimedOut(_), .. }
            if node == "hangs"
    ));
}

#[tokio::test(start_paused = true)]
async fn retries_exhausted_is_an_error_naming_the_node() {
    let calls = counter();
    let policy = NodePolicy::new().retry(RetryPolicy::attempts(3).backoff(
        Duration::from_millis(1),
        2.0,
        Duration::from_millis(10),
    ));
    let err = single(policy, calls.clone(), usize::MAX)
        .invoke(S::default(), 3)
        .await
        .expect_err("always fails");
    assert_eq!(count(&calls), 3);
    match &err.error {
        GraphError::NodeFailed {
            node,
            step,
            attempts,
            source,
        } => {
            assert_eq!(node, "flaky");
            assert_eq!(*step, 1);
            assert_eq!(*attempts, 3);
            assert_eq!(source.to_string(), "failure 3");
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(err.to_string().contains("`flaky`"));
}

#[tokio::test(start_paused = true)]
async fn retry_succeeds_within_the_attempts() {
    let calls = counter();
    let policy = NodePolicy::new().retry(RetryPolicy::attempts(3));
    let done = single(policy, calls.clone(), 2)
        .invoke(S::default(), 3)
        .await
        .expect("third attempt succeeds");
    assert_eq!(done.log, ["flaky"]);
    assert_eq!(count(&calls), 3);
}

#[tokio::test(start_paused = true)]
async fn retry_predicate_stops_errors_it_rejects() {
    let calls = counter();
    let policy = NodePolicy::new()
        .retry(RetryPolicy::attempts(5).retry_on(|e| matches!(e, AttemptError::TimedOut(_))));
    let err = single(policy, calls.clone(), usize::MAX)
        .invoke(S::default(), 3)
        .await
        .expect_err("not retried");
    assert_eq!(count(&calls), 1);
    assert!(matches!(
        err.error,
        GraphError::NodeFailed { attempts: 1, .. }
    ));
}

#[tokio::test(start_paused = true)]
async fn backoff_grows_exponentially_up_to_the_cap() {
    let calls = counter();
    let policy = NodePolicy::new().retry(RetryPolicy::attempts(4).backoff(
        Duration::from_millis(100),
        2.0,
        Duration::from_millis(250),
    ));
    let started = tokio::time::Instant::now();
    let _ = single(policy, calls.clone(), usize::MAX)
        .invoke(S::default(), 3)
        .await;
    // Virtual (paused) time: 100 + 200 + 250 (capped) ms between the four attempts.
    assert_eq!(count(&calls), 4);
    assert_eq!(started.elapsed().as_millis(), 550);
}

#[tokio::test(start_paused = true)]
async fn first_failure_cancels_in_flight_siblings() {
    let finished = Arc::new(AtomicBool::new(false));
    let f = finished.clone();
    let mut g = GraphBuilder::<S>::new();
    g.add_node("fails", |_s: Arc<S>| async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        Err("boom".into())
    })
    .add_node("slow", move |_s: Arc<S>| {
        let f = f.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            f.store(true, Ordering::SeqCst);
            Ok(U::default())
        }
    })
    .add_edge(START, "fails")
    .add_edge(START, "slow")
    .add_edge("fails", END)
    .add_edge("slow", END);
    let err = g
        .compile()
        .expect("valid")
        .invoke(S::default(), 3)
        .await
        .expect_err("fails");
    assert!(matches!(&err.error, GraphError::NodeFailed { node, .. } if node == "fails"));
    // Give a leaked sibling every chance to finish: it must not.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        !finished.load(Ordering::SeqCst),
        "sibling was not cancelled"
    );
    // The cancelled sibling left no pending write: a resume runs it again.
    let checkpoint = err.checkpoint.expect("checkpoint");
    assert!(checkpoint.pending_writes.is_empty());
    assert_eq!(checkpoint.next, ["fails", "slow"]);
}

#[tokio::test]
async fn a_panicking_node_is_a_node_failure() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("ok", logs("ok"))
        .add_node("panics", |_s: Arc<S>| async {
            if true {
                panic!("node bug");
            }
            Ok(U::default())
        })
        .add_edge(START, "ok")
        .add_edge(START, "panics")
        .add_edge("ok", END)
        .add_edge("panics", END);
    let err = g
        .compile()
        .expect("valid")
        .invoke(S::default(), 3)
        .await
        .expect_err("panics");
    match &err.error {
        GraphError::NodeFailed {
            node,
            source: AttemptError::Panicked(msg),
            ..
        } => {
            assert_eq!(node, "panics");
            assert_eq!(msg, "node bug");
        }
        other => panic!("unexpected error {other:?}"),
    }
}
