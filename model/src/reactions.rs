//! The reactions Firstline puts on messages, by their Slack names. The bot reacts when it records
//! a mention or a firing alert; the worker swaps that reaction when the round has answered.

/// 👀 — a mention or a firing alert was recorded and its round is queued.
pub const EYES: &str = "eyes";
/// ✅ — the round posted a grounded summary, or the mention resolved its thread. A person's ✅ on
/// an alert resolves its thread too.
pub const CHECK_MARK: &str = "white_check_mark";
/// ❓ — the round asked questions instead of posting a summary.
pub const QUESTION: &str = "question";
/// ⚠️ — the round could not finish.
pub const WARNING: &str = "warning";
/// 🔗 — the alert is linked to another thread's analysis (the same alert, or the same root).
pub const LINK: &str = "link";
