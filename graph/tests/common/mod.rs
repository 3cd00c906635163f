//! Shared test state and node helpers.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use firstline_graph::{BoxError, graph_state, sum};
use futures::future::BoxFuture;

graph_state! {
    /// Test state.
    #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct S {
        pub x: i64,
        pub y: i64,
        pub summary: Option<String>,
        pub log: Vec<String> = append,
        pub total: u64 = fold(sum),
    }
    /// Test update.
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct U;
}

/// A node that appends its name to `log` after `ms` milliseconds.
pub fn logs_after(
    name: &'static str,
    ms: u64,
) -> impl Fn(Arc<S>) -> BoxFuture<'static, Result<U, BoxError>> + Send + Sync + 'static {
    move |_s| {
        Box::pin(async move {
            if ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            Ok(U::default().log(vec![name.to_string()]))
        })
    }
}

/// A node that appends its name to `log`.
pub fn logs(
    name: &'static str,
) -> impl Fn(Arc<S>) -> BoxFuture<'static, Result<U, BoxError>> + Send + Sync + 'static {
    logs_after(name, 0)
}

/// A node that appends its name and counts its calls.
pub fn counted(
    name: &'static str,
    calls: Arc<AtomicUsize>,
) -> impl Fn(Arc<S>) -> BoxFuture<'static, Result<U, BoxError>> + Send + Sync + 'static {
    move |_s| {
        calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { Ok(U::default().log(vec![name.to_string()])) })
    }
}

pub fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

pub fn count(c: &AtomicUsize) -> usize {
    c.load(Ordering::SeqCst)
}
