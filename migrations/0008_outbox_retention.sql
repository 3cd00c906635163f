-- Delivered outbox rows are deleted once they are older than `bot.outbox_retention_hours`
-- (bot/src/relay/prune.rs), so the table stays the size of that window. The pruner finds them by
-- age: rows are appended in `created_at` order, so a BRIN index answers "older than" from a few
-- block ranges and costs the ingest statement next to nothing, unlike a B-tree on the hot path.
CREATE INDEX outbox_created_at_brin ON outbox USING brin (created_at);
