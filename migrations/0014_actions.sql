-- Actions a round proposed from its verified cause, and everything that happened to each: the
-- audit. At most one proposal per round. The row moves through its states once, each step a
-- conditional update (`WHERE state = …`), so two approvers clicking at once, a replayed click or
-- a click after expiry decide nothing a second time, and a retried execution finds the first
-- one's outcome. `change` is the exact write shown to the approver (the tool call, the object as
-- read at its resourceVersion, the fields it changes); `change_hash` is what the click is bound to.
CREATE TABLE actions (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    thread_id    bigint      NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    round_id     bigint      NOT NULL UNIQUE REFERENCES rounds (id) ON DELETE CASCADE,
    -- The catalogue action (firstline_model::Action) and the object it changes, for reading.
    action       jsonb       NOT NULL,
    object       text        NOT NULL,
    -- The headline cause it was proposed for.
    cause        text        NOT NULL,
    change       jsonb       NOT NULL,
    change_hash  text        NOT NULL CHECK (change_hash ~ '^[0-9a-f]{64}$'),
    state        text        NOT NULL DEFAULT 'proposed'
                 CHECK (state IN ('proposed', 'approved', 'rejected', 'expired', 'executed', 'failed')),
    -- The reply that shows it (set when posted).
    message_ts   text,
    proposed_at  timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    decided_by   text,
    decided_at   timestamptz,
    -- Execution attempts started (a worker killed mid-way leaves one started and none finished).
    attempts     integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- Set right before the write is first sent: from then on an attempt that cannot tell whether
    -- it landed retries (reading the object) instead of reporting it not executed.
    write_sent_at timestamptz,
    executed_at  timestamptz,
    -- What the write server answered, or why nothing was written.
    result       text,
    -- After the action: recovered or not, and the values read.
    verification jsonb,
    verified_at  timestamptz,
    -- The thread reply saying how it ended, posted once: marked before posting, so a retry that
    -- finds the mark and no ts looks for its own earlier reply instead of posting again.
    outcome_attempted_at timestamptz,
    outcome_ts   text,
    -- A decision names who made it and when; an undecided row has neither.
    CONSTRAINT actions_decided CHECK (
        (state IN ('proposed', 'expired')) = (decided_by IS NULL AND decided_at IS NULL)
    ),
    -- Only an approved action is ever executed.
    CONSTRAINT actions_executed_after_approval CHECK (
        state NOT IN ('executed', 'failed') OR decided_by IS NOT NULL
    )
);

CREATE INDEX actions_thread ON actions (thread_id, id);

-- An action's decision wakes its round (`wake`) and its final state is published (`publish`):
-- each at most once per action. No foreign key, like the outbox's other ids (0007): only the
-- transactions that write the action write its rows.
ALTER TABLE outbox
    ADD COLUMN action_id bigint,
    DROP CONSTRAINT outbox_one_subject,
    ADD CONSTRAINT outbox_one_subject CHECK (num_nonnulls(message_id, incident_id, action_id) = 1),
    ADD CONSTRAINT outbox_action_once UNIQUE (action_id, kind);

-- The write server's calls are audited like reads: a write (`tool_write`: sent, refused, never
-- sent, or sent with its answer lost) and the unredacted reads a write is computed from
-- (`tool_read_raw`, whose text is never stored).
ALTER TABLE audit
    DROP CONSTRAINT audit_action_check,
    ADD CONSTRAINT audit_action_check
        CHECK (action IN ('tool_call', 'tool_refused', 'model_call', 'slack_post', 'slack_update',
                          'slack_reaction', 'resolve', 'tool_write', 'tool_read_raw')),
    DROP CONSTRAINT audit_outcome_check,
    ADD CONSTRAINT audit_outcome_check
        CHECK (outcome IN ('ok', 'error', 'timeout', 'refused', 'cached', 'not_sent', 'unknown'));
