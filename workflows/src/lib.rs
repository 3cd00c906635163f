//! firstline-workflows: the durable per-thread round, as deterministic workflow code.
//!
//! - [`round`]: the `incident_round` workflow — it decides, activities act.
//! - [`activities`]: the activities' definitions (names and payloads); `firstline-activities`
//!   implements them, the worker registers both.
//! - [`types`]: the payloads the workflow and the activities exchange.
//!
//! The bot starts the workflow through [`IncidentRound`]'s typed definition (signal-with-start
//! of `incident_round` with its `mention` signal), so the names on the wire are written once.
//!
//! This crate knows nothing of Postgres, MCP, Slack's API or configuration: its dependency tree
//! holds none of them (a test in the workspace checks), so nothing here can do I/O by accident.

pub mod activities;
pub mod round;
pub mod types;

pub use activities::RoundActivities;
pub use round::IncidentRound;
