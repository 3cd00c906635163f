-- Incidents reach the topic the way messages do: resolution writes an outbox `publish` row in the
-- same transaction as the incident, and the embedder (the topic's consumer) embeds it. Such a row
-- is about an incident, not a message, so exactly one of the two ids is set.
ALTER TABLE outbox
    ALTER COLUMN message_id DROP NOT NULL,
    ADD COLUMN incident_id bigint,
    ADD CONSTRAINT outbox_one_subject CHECK (num_nonnulls(message_id, incident_id) = 1),
    ADD CONSTRAINT outbox_incident_once UNIQUE (incident_id, kind);

-- `firstline embedder --reindex` walks what a model change left behind, in id order.
CREATE INDEX incidents_embedding_model ON incidents (embedding_model, id);
CREATE INDEX message_embeddings_model ON message_embeddings (model, message_id);

-- Recall reads each list in `resolved_at` order, newest first, and stops early: the full-text
-- list the team's most recent matches, the identifier list the most recent incidents with the
-- alert's alertname, and with its service.
CREATE INDEX incidents_recent ON incidents (team_id, resolved_at DESC);
CREATE INDEX incidents_alertname_recent ON incidents (team_id, alertname, resolved_at DESC);
CREATE INDEX incidents_service_recent ON incidents (team_id, service, resolved_at DESC);
DROP INDEX incidents_identifiers;
