//! firstline-activities: the pure, deterministic core of an investigation.
//!
//! Apart from `tools` and `incident`, nothing here does I/O. The MCP tool layer, the lab and
//! the incident graph's nodes call these functions:
//!
//! - [`alert`] — parse a Slack alert message (or a HolmesGPT request) into an [`alert::AlertTarget`].
//! - [`redact`] — remove secrets from untrusted text before it is stored or shown.
//! - [`excerpt`] — bound a tool result to an evidence excerpt, within a per-round budget.
//! - [`evidence`] — evidence items `E1…`, missing evidence, digests, quote checking.
//! - [`detectors`] — deterministic detectors turning evidence into cited findings.
//! - [`tools`] — the capability interface the graph asks for evidence through, and the MCP tool
//!   layer behind it (the one module here that does I/O: MCP calls, `tool_cache`, `audit`).
//! - [`incident`] — the incident graph: investigate ∥ recall → summarise → judge → ask (its
//!   nodes reach the world only through the tool layer and Postgres).
//! - [`round`] — the round workflow's Temporal activities: load the thread, run the graph
//!   durably, commit, post once.
//! - [`holmes_fixture`] — read HolmesGPT's recorded tool calls (for the lab's peer adapter).

pub mod alert;
pub mod detectors;
pub mod evidence;
pub mod excerpt;
pub mod holmes_fixture;
pub mod incident;
pub mod redact;
pub mod round;
pub mod timeparse;
pub mod tools;
