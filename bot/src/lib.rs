//! Firstline's Slack ingress (`firstline bot`): Slack events in, durable records out.
//!
//! ```text
//! Slack ──Events API (http.rs) or Socket Mode (socket.rs)──▶ pipeline.rs
//!    classify.rs → ingest/writer.rs (group commit) → ingest.rs: ONE transaction per batch
//!                  (threads, messages deduped, outbox rows, resolution.rs: resolved thread +
//!                  incident) → ack each message after its batch commits
//! relay/ (background, replica-safe): outbox publish → Kafka (relay/kafka.rs)
//!                                    outbox wake    → Temporal signal-with-start (relay/temporal.rs)
//! slack/: the Web API client (post with Block Kit + metadata, update, react, replies), limits,
//!         pacing, signing
//! standin/: a Slack stand-in on a real socket for `firstline dev` and the tests
//! ```
//!
//! [`start`] runs the parts a process wants and stops them all on one cancellation token.

pub mod classify;
pub mod faults;
pub mod http;
pub mod ingest;
pub mod model;
pub mod pipeline;
pub mod reactions;
pub mod relay;
pub mod resolution;
pub mod schema;
pub mod slack;
pub mod socket;
pub mod standin;
pub mod telemetry;

mod run;

pub use run::{BotError, Parts, Running, start};
