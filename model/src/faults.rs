//! Named pause points for fault injection, on the `fail` crate: a point does nothing unless the
//! `FAILPOINTS` environment variable configures it (read once at start by `firstline bot`,
//! `firstline worker` and `firstline embedder`), e.g.
//! `FAILPOINTS='round.post.after_send=return(60000)'` pauses 60 s right after the reply was sent
//! and before its ts is stored — where a crash test `kill -9`s the process to prove that another
//! one finishes the work without losing or repeating it.

/// Bot: after a relay claimed its rows, before it delivers them.
pub const RELAY_AFTER_CLAIM: &str = "relay.after_claim";
/// Bot: after a relay delivered its rows, before it marks them sent.
pub const RELAY_AFTER_DELIVER: &str = "relay.after_deliver";
/// Worker: after a tool call's result is cached (inside `investigate`).
pub const TOOL_AFTER_CALL: &str = "round.tool.after_call";
/// Worker: after a graph super-step's checkpoint is stored.
pub const GRAPH_AFTER_STEP: &str = "round.graph.after_step";
/// Worker: after the model path answered (`refine_round`), before its outcome is stored.
pub const REFINE_AFTER_MODEL: &str = "round.refine.after_model";
/// Worker: after `chat.postMessage` answered, before the posted ts is stored.
pub const POST_AFTER_SEND: &str = "round.post.after_send";
/// Worker: after `chat.update` answered (`edit_post`), before the edit is stored.
pub const EDIT_AFTER_SEND: &str = "round.edit.after_send";

/// Embedder: after a batch's vectors are written, before its offsets are committed.
pub const EMBEDDER_AFTER_WRITE: &str = "embedder.after_write";
/// After an action's execution attempt was counted, before its write is sent.
pub const ACTION_BEFORE_WRITE: &str = "action.before_write";
/// After the write server answered an action's write, before the outcome is stored.
pub const ACTION_AFTER_WRITE: &str = "action.after_write";

/// Pauses for the milliseconds `FAILPOINTS` gives `point` (`point=return(MS)`), if any.
#[cfg(feature = "faults")]
pub async fn pause(point: &str) {
    let millis = fail::eval(point, |arg| arg.and_then(|a| a.trim().parse::<u64>().ok()));
    if let Some(Some(millis)) = millis {
        tracing::warn!(point, millis, "fault injection: pausing");
        tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
    }
}
