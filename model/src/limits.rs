//! The default bounds of a round. The settings (`round.*`) start from these, and the workflow
//! uses them for the one call it makes before it has read the worker's configured limits.

/// Rounds one thread gets; later mentions are recorded, not answered.
pub const MAX_ROUNDS: u32 = 5;
/// No round for a thread older than this (seconds since its `thread_ts`).
pub const MAX_THREAD_AGE_SECS: u64 = 24 * 3600;
/// After asking, how long a run waits for a mention before it closes (seconds).
pub const IDLE_TIMEOUT_SECS: u64 = 30 * 60;
/// One `run_graph` attempt's time limit (seconds).
pub const RUN_GRAPH_TIMEOUT_SECS: u64 = 300;
/// A `run_graph` silent this long is retried on another worker (seconds).
pub const RUN_GRAPH_HEARTBEAT_SECS: u64 = 30;
/// Time limit of `load_context`, `commit_round` and `post_to_thread` attempts (seconds).
pub const ACTIVITY_TIMEOUT_SECS: u64 = 30;
/// Attempts per activity before the run fails.
pub const ACTIVITY_ATTEMPTS: u32 = 3;
/// First retry delay of an activity (milliseconds; doubles per attempt).
pub const RETRY_INITIAL_MS: u64 = 1000;
/// Cap on an activity's retry delay (seconds).
pub const RETRY_MAX_SECS: u64 = 30;
/// Characters of thread conversation a round reads, most recent first.
pub const CONTEXT_CHARS: usize = 6000;
/// Tool calls one round's investigation may make.
pub const MAX_TOOL_CALLS: u32 = 25;
/// Seconds one round's investigation may spend gathering evidence.
pub const INVESTIGATE_SECS: u64 = 90;
