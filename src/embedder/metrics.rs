//! The embedder's metric names, in one place (`docs/deploy.md` lists them; `tests/deploy.rs`
//! checks it does).

/// Records read, by outcome: `embedded`, `skipped` (not a person's message) or `poison`
/// (unreadable, committed past).
pub const RECORDS: &str = "firstline_embedder_records_total";
/// Vectors inserted or changed, by `kind` (`message`, `incident`); a redelivery adds none.
pub const VECTORS_WRITTEN: &str = "firstline_embedder_vectors_written_total";
/// Seconds from a batch's first record taken off the queue to its offsets committed.
pub const BATCH_SECONDS: &str = "firstline_embedder_batch_seconds";
/// Failed model calls or writes that were retried, by `stage` (`embed`, `write`).
pub const RETRIES: &str = "firstline_embedder_retries_total";
/// Errors from the consumer itself (broker unreachable, rebalance trouble); it keeps trying.
pub const CONSUMER_ERRORS: &str = "firstline_embedder_consumer_errors_total";

/// Records in the assigned partitions not yet committed by the group, by `partition`.
pub const LAG: &str = "firstline_embedder_lag_records";
