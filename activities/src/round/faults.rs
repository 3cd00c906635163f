//! Named pause points for fault injection, on the `fail` crate: a point does nothing unless the
//! `FAILPOINTS` environment variable configures it (read once by `firstline worker` at start),
//! e.g. `FAILPOINTS='round.post.after_send=return(60000)'` pauses 60 s right after the reply was
//! sent and before its ts is stored — where the crash tests `kill -9` the worker to prove that a
//! retry on another worker neither loses the round nor posts it twice.
//!
//! Points: [`TOOL_AFTER_CALL`], [`GRAPH_AFTER_STEP`], [`POST_AFTER_SEND`].

/// After a tool call's result is cached (inside `investigate`).
pub const TOOL_AFTER_CALL: &str = "round.tool.after_call";
/// After a graph super-step's checkpoint is stored.
pub const GRAPH_AFTER_STEP: &str = "round.graph.after_step";
/// After `chat.postMessage` answered, before the posted ts is stored.
pub const POST_AFTER_SEND: &str = "round.post.after_send";

pub use firstline_bot::faults::pause;
