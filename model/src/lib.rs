//! firstline-model: the words every other crate shares, and nothing else.
//!
//! A Slack event becomes rows, a Kafka record, an outbox row and a Temporal signal; a round reads
//! the thread back. The types those steps hand each other live here, so the crates that produce
//! them and the crates that consume them never have to import each other:
//!
//! - [`thread`]: [`ThreadKey`], the unit of an incident conversation (workflow id, Kafka key).
//! - [`message`]: the versioned Kafka record of every recorded message and the outbox's wake-up.
//! - [`round`]: the round workflow's input ([`Trigger`]) and its `mention` signal.
//! - [`action`]: the catalogue of reversible actions a person may approve, and their decisions.
//! - [`context`]: what a round knows of its thread ([`ThreadContext`]).
//! - [`question`]: a question the bot asks, typed so an answer can be read against it.
//! - [`limits`]: the default bounds of a round, shared by the settings and the workflow.
//! - [`reactions`]: the emoji names the bot and the worker put on messages.
//! - [`faults`]: the named pause points of the crash tests.
//! - [`text`]: cutting text to a character budget.
//!
//! This crate knows nothing of Slack's API, Postgres, Temporal or MCP: plain serde types only.

pub mod action;
pub mod context;
pub mod faults;
pub mod limits;
pub mod message;
pub mod question;
pub mod reactions;
pub mod round;
pub mod text;
pub mod thread;

pub use action::{
    ACTION_SCHEMA, Action, ActionBlock, ActionRecord, ActionState, Decision, DecisionSignal,
    DecisionWake, ObjectRef, WorkloadKind,
};
pub use context::{ConversationMessage, EarlierRound, HumanAnswer, ThreadContext};
pub use message::{
    INCIDENT_SCHEMA, IncidentRecord, MESSAGE_SCHEMA, MessageRecord, TopicRecord, WakeRecord,
    incident_text,
};
pub use question::{AnswerBlock, FeedbackBlock, Question, QuestionKind, Verdict};
pub use round::{MentionSignal, Trigger};
pub use thread::ThreadKey;
