//! Answers remembered per round and step, so a retried activity does not ask the model again.
//!
//! Same contract as the tool cache: the caller picks the key (round id + step), a hit is served
//! as it was first answered, and only answers (never errors) are stored.

use crate::ChatAnswer;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// Where answers are remembered (in memory here; the store implements it durably).
pub trait ReplyCache: Send + Sync {
    /// The answer stored under `key`, if any. A failing store answers `None` (and asks again).
    fn get(&self, key: &str) -> impl Future<Output = Option<ChatAnswer>> + Send;

    /// Stores `answer` under `key`. A failing store logs and carries on.
    fn put(&self, key: &str, answer: &ChatAnswer) -> impl Future<Output = ()> + Send;
}

impl<C: ReplyCache> ReplyCache for Arc<C> {
    fn get(&self, key: &str) -> impl Future<Output = Option<ChatAnswer>> + Send {
        (**self).get(key)
    }

    fn put(&self, key: &str, answer: &ChatAnswer) -> impl Future<Output = ()> + Send {
        (**self).put(key, answer)
    }
}

/// An in-memory [`ReplyCache`] (one process; tests and single-attempt rounds). Clones share it.
#[derive(Debug, Clone, Default)]
pub struct MemoryCache {
    answers: Arc<Mutex<HashMap<String, ChatAnswer>>>,
}

impl MemoryCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers stored.
    pub fn len(&self) -> usize {
        self.answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ReplyCache for MemoryCache {
    async fn get(&self, key: &str) -> Option<ChatAnswer> {
        self.answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(key)
            .cloned()
    }

    async fn put(&self, key: &str, answer: &ChatAnswer) {
        self.answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(key.to_string(), answer.clone());
    }
}
