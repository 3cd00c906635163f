//! firstline-workflows: the durable per-thread round (DESIGN §4) and the worker that runs it.
//!
//! - [`round`]: the `incident_round` workflow — deterministic: it decides, activities act.
//! - [`worker`]: `firstline worker` — a Temporal worker on the `incident-analysis` task queue
//!   with the round's workflow and activities, `/healthz`, Prometheus metrics and a graceful
//!   shutdown.

pub mod round;
pub mod worker;

pub use round::IncidentRound;
pub use worker::{WorkerError, WorkerHandle, start_worker};
