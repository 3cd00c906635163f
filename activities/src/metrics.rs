//! The worker's metric names, each defined once (the process installs the Prometheus exporter
//! and serves them on `/metrics`; see ARCHITECTURE.md, "Metrics").

/// Counter: rounds whose graph started (first attempt), for the whole worker.
pub const ROUNDS_STARTED: &str = "firstline_rounds_started_total";
/// Counter: rounds committed, by `outcome` (grounded, asking).
pub const ROUNDS_FINISHED: &str = "firstline_rounds_finished_total";
/// Histogram: seconds per graph super-step, by `nodes` (the step's nodes joined by `+`).
pub const GRAPH_STEP_SECONDS: &str = "firstline_graph_step_seconds";
/// Counter: heartbeats sent by `run_graph` and `refine_round`.
pub const HEARTBEATS: &str = "firstline_heartbeats_total";
/// Counter: activity attempts that failed, by `retryable`.
pub const ACTIVITY_FAILURES: &str = "firstline_activity_failures_total";
/// Counter: activity attempts after the first, by `activity`.
pub const ACTIVITY_RETRIES: &str = "firstline_activity_retries_total";
/// Counter: rounds the model path ran over, by `outcome` (`used`, or the fallback reason).
pub const MODEL_ROUNDS: &str = "firstline_model_rounds_total";
/// Counter: model calls (answered, failed or replayed from the reply cache).
pub const MODEL_CALLS: &str = "firstline_model_calls_total";
/// Counter: tool calls the model made.
pub const MODEL_TOOL_CALLS: &str = "firstline_model_tool_calls_total";
/// Counter: model tokens, by `kind` (prompt, completion).
pub const MODEL_TOKENS: &str = "firstline_model_tokens_total";
/// Histogram: seconds spent waiting for the model per round.
pub const MODEL_LATENCY_SECONDS: &str = "firstline_model_latency_seconds";
/// Histogram: seconds per `refine_round`, model and tools together.
pub const REFINE_SECONDS: &str = "firstline_refine_seconds";
/// Counter: reactions Slack refused on a round's messages, by `code` (`message_not_found`, …,
/// `unreachable`); cosmetic, never a round's failure.
pub const REACTION_FAILURES: &str = "firstline_reaction_failures_total";
/// Gauge: activities this worker is running now, by `task_queue`; what KEDA's second trigger
/// reads so that a worker in the middle of a round is never scaled away (`deploy/keda/`).
pub const ACTIVITIES_IN_FLIGHT: &str = "firstline_activities_in_flight";
/// Actions by what happened to them: `proposed`, `not_shown`, `expired`, `executed`, `failed`,
/// `recovered`, `not_recovered`.
pub const ACTIONS: &str = "firstline_actions_total";
/// Counter: alerts linked to another thread's analysis by their root, by `reason`: `same_root`
/// (their round found it), `shared_root` (one object read showed it, before any round); the
/// bot counts repeats (`same_alert`) under the same name.
pub const ALERTS_LINKED: &str = "firstline_alerts_linked_total";
