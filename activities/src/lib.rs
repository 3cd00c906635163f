//! firstline-activities: the round's Temporal activities, implemented. The workflow
//! (`firstline-workflows`) declares them; each implementation here is bound to its declaration,
//! so names and payloads cannot drift apart.
//!
//! - [`context`]: `load_context` — the thread rebuilt from Postgres, the guards' inputs and the
//!   limits the workflow applies (a cold start sees everything: Postgres is the source of truth).
//! - [`graph_run`]: `run_graph` — the incident graph, checkpointed in Postgres after every
//!   super-step and resumed from there on retry, heartbeating while a step runs.
//! - [`commit`]: `commit_round` — round, evidence, claims and usage in one transaction,
//!   idempotent on (thread, round).
//! - [`post`] and [`blocks`]: `post_to_thread` and `post_failure` — the Block Kit reply, posted
//!   once whatever fails (the posted ts is stored; a retry finds its own message by metadata).
//! - [`refine`]: `refine_round` — with a model configured, the model's pass over the posted
//!   round (grounded additions or the fallback reason), stored on the round once; `edit_post`
//!   (in [`post`]) then edits the reply in place.
//! - [`action`]: `propose_action`, `expire_action`, `execute_action`, `verify_action`,
//!   `show_action` — a verified cause's proposal carried through approval: the exact change and
//!   its hash, the write sent at most once through the write-capable MCP server, the outcome
//!   verified and shown (`[actions]`, off by default).
//! - [`group`]: `link_round`, `post_link` — storms: a thread whose alert another thread's
//!   analysis answers (the same alert, or its round found the same root) gets one line, and the
//!   primary's reply lists it.
//! - [`bindings`]: the Temporal bindings (`#[activities]`), one span per activity.
//! - [`error`]: what fails, and which failures another attempt can mend.
//! - [`metrics`]: the names of the worker's metrics.
//!
//! The investigation itself lives in `firstline-investigation`; this crate only carries a round
//! through it durably. It knows nothing of how Slack events arrive.

pub mod action;
pub mod bindings;
pub mod blocks;
pub mod commit;
pub mod context;
pub mod error;
pub mod graph_run;
pub mod group;
pub mod metrics;
pub mod post;
pub mod refine;

pub use bindings::{Activities, Deps, round_policy};
pub use error::RoundError;
