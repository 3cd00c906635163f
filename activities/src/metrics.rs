//! The worker's metric names, each defined once (the process installs the Prometheus exporter
//! and serves them on `/metrics`; see ARCHITECTURE.md, "Metrics").

/// Counter: rounds whose graph started (first attempt), for the whole worker.
pub const ROUNDS_STARTED: &str = "firstline_rounds_started_total";
/// Counter: rounds committed, by `outcome` (grounded, asking).
pub const ROUNDS_FINISHED: &str = "firstline_rounds_finished_total";
/// Histogram: seconds per graph super-step, by `nodes` (the step's nodes joined by `+`).
pub const GRAPH_STEP_SECONDS: &str = "firstline_graph_step_seconds";
/// Counter: heartbeats sent by `run_graph`.
pub const HEARTBEATS: &str = "firstline_heartbeats_total";
/// Counter: activity attempts that failed, by `retryable`.
pub const ACTIVITY_FAILURES: &str = "firstline_activity_failures_total";
/// Counter: activity attempts after the first, by `activity`.
pub const ACTIVITY_RETRIES: &str = "firstline_activity_retries_total";
