//! Named pause points for fault injection, on the `fail` crate: a point does nothing unless the
//! `FAILPOINTS` environment variable configures it (read once at start by `firstline bot` and
//! `firstline worker`), e.g. `FAILPOINTS='relay.after_claim=return(60000)'` pauses a relay 60 s
//! while it holds its claimed rows — where the crash test `kill -9`s the bot to prove another
//! instance finishes the outbox.
//!
//! The bot's points: [`RELAY_AFTER_CLAIM`], [`RELAY_AFTER_DELIVER`]. The round's are in
//! `firstline_activities::round::faults`.

use std::time::Duration;

/// After a relay claimed its rows, before it delivers them.
pub const RELAY_AFTER_CLAIM: &str = "relay.after_claim";
/// After a relay delivered its rows, before it marks them sent.
pub const RELAY_AFTER_DELIVER: &str = "relay.after_deliver";

/// Pauses for the milliseconds `FAILPOINTS` gives `point` (`point=return(MS)`), if any.
pub async fn pause(point: &str) {
    let millis = fail::eval(point, |arg| arg.and_then(|a| a.trim().parse::<u64>().ok()));
    if let Some(Some(millis)) = millis {
        tracing::warn!(point, millis, "fault injection: pausing");
        tokio::time::sleep(Duration::from_millis(millis)).await;
    }
}
