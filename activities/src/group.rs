//! Storms: alerts that share a cause answered by one analysis (migration 0015,
//! `firstline_store::groups`).
//!
//! - [`link`]: `link_round` — a grounded first round whose root is an open group's links its
//!   thread to that group (or records the root for later alerts); `post_link` — a linked
//!   thread's one line pointing at the analysis, posted once, then the primary's reply edited to
//!   list the group's alerts.
//! - [`reply`]: the primary's reply as it stands (the round, its proposed action, the linked
//!   alerts), and the one place that replaces it, under the thread's reply lock, so edits from
//!   several workers never land out of order.
//! - [`blocks`]: what those replies say.

pub mod blocks;
pub mod link;
pub mod reply;
