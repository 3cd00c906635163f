-- The outbox is a queue of self-contained payloads (the Kafka record, the wake-up), written only by
-- the ingest statement that writes its message, in the same transaction. Its two foreign keys
-- proved nothing that statement does not already guarantee, and each cost a referential check per
-- row on the ingest hot path: a lookup plus a row lock (and its WAL record) on the thread and on
-- the message. A row whose message is gone later (retention) is still deliverable as it stands.
ALTER TABLE outbox
    DROP CONSTRAINT outbox_thread_id_fkey,
    DROP CONSTRAINT outbox_message_id_fkey;
