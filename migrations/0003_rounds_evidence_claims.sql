-- Incident rounds. A round is committed in one transaction with its evidence and claims,
-- idempotently on (thread, number) (invariant 11); the posted Slack ts makes posting idempotent.

CREATE TABLE rounds (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    thread_id         bigint      NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    number            integer     NOT NULL CHECK (number >= 1),
    workflow_id       text        NOT NULL,
    run_id            text        NOT NULL,
    started_at        timestamptz NOT NULL,
    finished_at       timestamptz NOT NULL DEFAULT now(),
    -- The judge's verdict: grounded or asking.
    grounded          boolean     NOT NULL,
    -- The whole report: summary, causes, next steps, questions, missing evidence, verdict.
    result            jsonb       NOT NULL,
    posted_ts         text,
    posted_at         timestamptz,
    tool_calls        integer     NOT NULL DEFAULT 0 CHECK (tool_calls >= 0),
    model_calls       integer     NOT NULL DEFAULT 0 CHECK (model_calls >= 0),
    prompt_tokens     integer     NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens integer     NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    UNIQUE (thread_id, number),
    CHECK ((posted_ts IS NULL) = (posted_at IS NULL))
);

CREATE TABLE evidence (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    round_id   bigint      NOT NULL REFERENCES rounds (id) ON DELETE CASCADE,
    -- E1, E2, … as cited by claims.
    ref        text        NOT NULL CHECK (ref ~ '^E[1-9][0-9]*$'),
    capability text        NOT NULL,
    server     text        NOT NULL,
    tool       text        NOT NULL,
    args       jsonb       NOT NULL,
    -- sha256 of server, tool and canonical arguments: the tool_cache key.
    digest     text        NOT NULL,
    -- Redacted and truncated (≤ 3,500 characters).
    excerpt    text        NOT NULL CHECK (char_length(excerpt) <= 3500),
    fetched_at timestamptz NOT NULL,
    UNIQUE (round_id, ref)
);

CREATE TABLE claims (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    round_id      bigint  NOT NULL REFERENCES rounds (id) ON DELETE CASCADE,
    ordinal       integer NOT NULL CHECK (ordinal >= 1),
    text          text    NOT NULL,
    evidence_refs text[]  NOT NULL,
    quote         text    NOT NULL,
    -- The judge's deterministic check: the cited ids exist and the quote occurs in them.
    supported     boolean NOT NULL,
    UNIQUE (round_id, ordinal)
);

-- Tool results by digest of (thread, round, server, tool, canonical args): the same call in the
-- same round is never made twice, and a retried activity is served from here.
CREATE TABLE tool_cache (
    digest     text PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
    server     text        NOT NULL,
    tool       text        NOT NULL,
    args       jsonb       NOT NULL,
    is_error   boolean     NOT NULL,
    result     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
