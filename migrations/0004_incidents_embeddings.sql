-- Memory. A resolved thread becomes an incident that recall finds by vector similarity, full-text
-- search and exact identifiers. Embeddings are 384-dimensional, the size of the default local
-- model (all-MiniLM-L6-v2); another model size is a new migration, not a silent mismatch.

CREATE TABLE incidents (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    thread_id       bigint      NOT NULL UNIQUE REFERENCES threads (id) ON DELETE CASCADE,
    -- Recall is scoped to the same workspace.
    team_id         text        NOT NULL,
    permalink       text,
    alertname       text,
    service         text,
    namespace       text,
    title           text        NOT NULL,
    summary         text        NOT NULL,
    root_cause      text        NOT NULL,
    resolution      text        NOT NULL DEFAULT '',
    resolved_at     timestamptz NOT NULL,
    embedding       vector(384),
    embedding_model text,
    search          tsvector GENERATED ALWAYS AS (
        to_tsvector('english',
            title || ' ' || summary || ' ' || root_cause || ' ' || resolution || ' ' ||
            coalesce(alertname, '') || ' ' || coalesce(service, '') || ' ' ||
            coalesce(namespace, ''))
    ) STORED,
    CHECK ((embedding IS NULL) = (embedding_model IS NULL))
);

CREATE INDEX incidents_embedding ON incidents USING hnsw (embedding vector_cosine_ops);
CREATE INDEX incidents_search ON incidents USING gin (search);
CREATE INDEX incidents_identifiers ON incidents (team_id, alertname, service, namespace);

CREATE TABLE message_embeddings (
    message_id  bigint PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    model       text        NOT NULL,
    embedding   vector(384) NOT NULL,
    embedded_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX message_embeddings_embedding
    ON message_embeddings USING hnsw (embedding vector_cosine_ops);
