//! One scenario's world, shared by every endpoint serving it: a write through the write
//! endpoint is seen by every later read on either endpoint. The world sits behind a lock that is
//! never held across an `.await`: a read renders under the read lock, a write computes the new
//! world under the write lock and swaps it in (see `crate::write`).

use std::sync::{Arc, Mutex, RwLock};

use chrono::Utc;
use serde_json::{Map, Value};

use super::counts::{CallCounts, Writes};
use crate::render::Rendered;
use crate::scenario::{RawToolResult, Scenario};
use crate::write::{self, WriteTool};

/// A scenario's world and what is counted on it. Clones share all of it.
#[derive(Clone)]
pub struct LabWorld(Arc<Shared>);

struct Shared {
    scenario: RwLock<Scenario>,
    counts: CallCounts,
    writes: Writes,
    /// Overrides the scenario's `writes.forbidden` when set.
    forbidden: Mutex<Option<bool>>,
}

impl std::fmt::Debug for LabWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabWorld")
            .field("scenario", &self.read(|s| s.name.clone()))
            .field("writes", &self.0.writes.len())
            .finish()
    }
}

impl LabWorld {
    /// The world of `scenario`, as loaded.
    pub fn new(scenario: Scenario) -> Self {
        Self(Arc::new(Shared {
            scenario: RwLock::new(scenario),
            counts: CallCounts::default(),
            writes: Writes::default(),
            forbidden: Mutex::new(None),
        }))
    }

    /// The world as it is now (the scenario with every write applied).
    pub fn scenario(&self) -> Scenario {
        self.read(Scenario::clone)
    }

    /// Calls received per tool, on every endpoint.
    pub fn counts(&self) -> CallCounts {
        self.0.counts.clone()
    }

    /// The writes that changed the world.
    pub fn writes(&self) -> Writes {
        self.0.writes.clone()
    }

    /// Makes every write tool refuse as RBAC does (`true`), or accept (`false`), whatever the
    /// scenario's `writes.forbidden` says.
    pub fn forbid_writes(&self, forbidden: bool) {
        *self.0.forbidden.lock().unwrap_or_else(|p| p.into_inner()) = Some(forbidden);
    }

    /// Runs `f` on the world under the read lock.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&Scenario) -> R) -> R {
        let scenario = self.0.scenario.read().unwrap_or_else(|p| p.into_inner());
        f(&scenario)
    }

    /// The first verbatim result that answers this call, if any.
    pub(crate) fn override_for(
        &self,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Option<RawToolResult> {
        self.read(|s| super::find_override(&s.spec.raw_tool_results, tool, args).cloned())
    }

    /// Runs a write tool: the new world replaces the old one when the write changed it, and the
    /// write is recorded.
    pub(crate) fn write(&self, tool: WriteTool, args: &Map<String, Value>) -> Rendered {
        let mut scenario = self.0.scenario.write().unwrap_or_else(|p| p.into_inner());
        let forbidden = self
            .0
            .forbidden
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .unwrap_or(scenario.spec.writes.forbidden);
        let user = scenario.spec.writes.user().to_string();
        let written = write::call(
            &scenario,
            tool,
            args,
            Utc::now(),
            forbidden.then_some(user.as_str()),
        )?;
        if let Some((next, applied)) = written.changed {
            tracing::info!(tool = %applied.tool, kind = %applied.kind, name = %applied.name, change = applied.change.as_str(), "lab world changed by a write");
            *scenario = next;
            self.0.writes.record(applied);
        }
        Ok(written.text)
    }
}
