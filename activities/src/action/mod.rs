//! Acting with a person's approval (`[actions]`, off by default). A grounded round's verified
//! cause may carry a proposal (`firstline_investigation::propose`); these activities carry it
//! through:
//!
//! - [`propose`]: `propose_action` — the exact change computed against the object as the write
//!   server returns it now, described, hashed and stored once per round (`actions`).
//! - [`execute`]: `execute_action` — once approved, the write sent at most once: a retry finds
//!   the first attempt's outcome, or the idempotency key on the object; an object that moved on
//!   since it was shown is refused with the reason.
//! - [`verify`]: `verify_action` — the evidence behind the cause (the alert's expression, the
//!   workload's pods) re-read for a bounded window: recovered or not, with the values.
//! - [`show`]: `expire_action` and `show_action` — the reply re-rendered with the action's state,
//!   and its outcome posted in the thread once.
//! - [`change`]: action + object → the write, its fields and hash (pure); [`writer`]: the write
//!   server (its allowlist is the catalogue's tools).

pub mod blocks;
pub mod change;
pub mod execute;
pub mod propose;
pub mod show;
pub mod verify;
pub mod writer;

pub use writer::Writer;

use firstline_config::ActionsSettings;

/// What the action activities need besides the round's.
#[derive(Clone, Debug)]
pub struct ActionDeps {
    pub settings: ActionsSettings,
    pub writer: Writer,
}

/// The outcome counter's label for each way an action ends or moves.
pub(crate) fn count(outcome: &'static str) {
    metrics::counter!(crate::metrics::ACTIONS, "outcome" => outcome).increment(1);
}
