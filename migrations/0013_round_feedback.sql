-- What people said of a round's reply: "Helpful" or "Wrong cause", one row per person per round
-- (a second click changes their verdict, never adds a row). A round marked wrong is never the
-- source of its thread's incident's cause, so recall never offers that cause again.
CREATE TABLE round_feedback (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    round_id   bigint      NOT NULL REFERENCES rounds (id) ON DELETE CASCADE,
    user_id    text        NOT NULL,
    verdict    text        NOT NULL CHECK (verdict IN ('helpful', 'wrong')),
    -- The right cause, as the person wrote it in the "Wrong cause" dialog (optional, redacted).
    note       text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (round_id, user_id)
);

CREATE INDEX round_feedback_wrong ON round_feedback (round_id) WHERE verdict = 'wrong';
