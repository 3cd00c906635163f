//! The bot's metric names, each defined once. Metrics go through the `metrics` facade; the
//! process installs the Prometheus recorder and the bot serves it on `GET /metrics` (see
//! ARCHITECTURE.md, "Metrics"). Tests that never install it record into a no-op recorder.

/// Counter: events handled, by `outcome` (stored, duplicate, ignored, refused, error, rejected)
/// and `kind`.
pub const EVENTS: &str = "firstline_bot_events_total";
/// Histogram: seconds from classification to commit.
pub const INGEST_SECONDS: &str = "firstline_bot_ingest_seconds";
/// Histogram: messages per ingest transaction (group commit).
pub const INGEST_BATCH_SIZE: &str = "firstline_bot_ingest_batch_size";
/// Counter: batches the database rejected, recorded again one message per transaction.
pub const INGEST_BATCH_SPLITS: &str = "firstline_bot_ingest_batch_splits_total";
/// Counter: outbox delivery attempts, by `relay` and `outcome` (ok, error).
pub const RELAY_ATTEMPTS: &str = "firstline_relay_attempts_total";
/// Histogram: seconds from outbox row creation to delivery, by `relay`.
pub const RELAY_LAG_SECONDS: &str = "firstline_relay_lag_seconds";
/// Gauge: age in seconds of the oldest undelivered row at the last claim, by `relay`.
pub const RELAY_OLDEST_PENDING_SECONDS: &str = "firstline_relay_oldest_pending_seconds";
/// Counter: delivered outbox rows deleted by retention.
pub const OUTBOX_PRUNED: &str = "firstline_outbox_pruned_total";
/// Counter: threads resolved at ingest, by `via` (mention, recovery_alert, check_mark).
pub const RESOLUTIONS: &str = "firstline_bot_resolutions_total";
/// Counter: Slack retries seen (`X-Slack-Retry-Num` present), by `reason`.
pub const SLACK_RETRIES: &str = "firstline_bot_slack_retries_total";
/// Counter: secrets removed from Slack messages before they were stored.
pub const REDACTIONS: &str = "firstline_bot_redactions_total";
/// Counter: people's verdicts on a round's reply, by `verdict` (helpful, wrong); a repeated click
/// counts once.
pub const FEEDBACK: &str = "firstline_round_feedback_total";
/// Counter: clicks on a proposed action's Approve / Reject, by `outcome` (recorded_approve,
/// recorded_reject, not_allowed, already_decided, expired, other_change, unknown, disabled).
pub const ACTION_DECISIONS: &str = "firstline_action_decisions_total";
/// Counter: firing alerts linked at ingest to an open group that already has the same alert
/// (not investigated again), `reason` = `same_alert`; the worker counts `same_root` links.
pub const ALERTS_LINKED: &str = "firstline_alerts_linked_total";
