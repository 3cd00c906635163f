-- Audit trail (invariant 7): every tool call, refusal, model call and Slack post, with outcome.
CREATE TABLE audit (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    thread_id    bigint REFERENCES threads (id) ON DELETE SET NULL,
    round_number integer CHECK (round_number >= 1),
    -- Which process acted, e.g. worker@host.
    actor        text        NOT NULL,
    action       text        NOT NULL
        CHECK (action IN ('tool_call', 'tool_refused', 'model_call', 'slack_post', 'slack_update',
                          'slack_reaction', 'resolve')),
    -- server/tool, model name, or channel.
    target       text        NOT NULL,
    outcome      text        NOT NULL
        CHECK (outcome IN ('ok', 'error', 'timeout', 'refused', 'cached')),
    duration_ms  integer CHECK (duration_ms >= 0),
    -- Redacted arguments and sizes; never raw secrets.
    detail       jsonb       NOT NULL DEFAULT '{}'
);

CREATE INDEX audit_thread ON audit (thread_id, at);
