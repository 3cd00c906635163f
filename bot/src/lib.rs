//! firstline-bot: Slack ingress (`firstline bot`) — Slack events in, durable records out.
//!
//! ```text
//! Slack ──Events API (http.rs) or Socket Mode (socket.rs)──▶ pipeline.rs
//!    interactions (a click on a question's choice, interaction.rs) are recorded the same way;
//!    Approve / Reject on a proposed action is decided by approval.rs (once, in `actions`);
//!    `/firstline investigate` (command.rs) posts a new thread and records its alert
//!    classify.rs → ingest/writer.rs (group commit) → ingest.rs: ONE transaction per batch
//!                  (threads, messages deduped, outbox rows, resolution.rs: resolved thread +
//!                  incident) → ack each message after its batch commits
//! relay/ (background, replica-safe): outbox publish → Kafka (relay/kafka.rs)
//!                                    outbox wake    → Temporal signal-with-start (relay/temporal.rs)
//!                                                     or, for a decision, a plain signal
//! reactions.rs: 👀 on a recorded mention, an answered question or a decision shown, a refused
//!               click explained to its clicker, off the ack path
//! ```
//!
//! [`start`] runs the parts a process wants and stops them all on one cancellation token.
//!
//! The bot knows nothing of investigations: it records, resolves threads and wakes the round
//! workflow through its typed definition (`firstline_workflows::IncidentRound`); the worker does
//! the rest.

pub mod approval;
pub mod classify;
pub mod command;
pub mod http;
pub mod ingest;
pub mod interaction;
pub mod message;
pub mod metrics;
pub mod pipeline;
pub mod reactions;
pub mod relay;
pub mod resolution;
pub mod socket;
pub mod trace;

mod run;

pub use run::{BotError, Parts, Running, start};
