//! What tests count on a running lab: calls received per tool (before anything else happens to
//! them, refused ones included) and the writes that changed the world. Clones share the counts.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::write::AppliedWrite;

/// Calls received per tool name. Clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct CallCounts(Arc<Mutex<BTreeMap<String, u64>>>);

impl CallCounts {
    pub(super) fn record(&self, tool: &str) {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *counts.entry(tool.to_string()).or_default() += 1;
    }

    /// Calls of one tool.
    pub fn get(&self, tool: &str) -> u64 {
        self.snapshot().get(tool).copied().unwrap_or(0)
    }

    /// Calls of all tools.
    pub fn total(&self) -> u64 {
        self.snapshot().values().sum()
    }

    /// Every tool's count.
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The writes that changed the world, oldest first: a refused write (RBAC, a stale
/// resourceVersion, a bad object) or one that changed nothing is not among them. Clones share
/// the list.
#[derive(Debug, Clone, Default)]
pub struct Writes(Arc<Mutex<Vec<AppliedWrite>>>);

impl Writes {
    pub(super) fn record(&self, write: AppliedWrite) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(write);
    }

    /// Every write, oldest first.
    pub fn all(&self) -> Vec<AppliedWrite> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many writes changed the world.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// No write changed the world.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The writes that applied an object annotated `firstline.dev/action: <action>`.
    pub fn with_action(&self, action: &str) -> Vec<AppliedWrite> {
        self.all()
            .into_iter()
            .filter(|w| w.action.as_deref() == Some(action))
            .collect()
    }
}
