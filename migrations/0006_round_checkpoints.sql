-- Durable rounds (invariant 11). `run_graph` stores the incident graph's checkpoint after every
-- super-step (step 0 is the round's input), so a retried activity on another worker resumes from
-- the last completed step instead of starting over; `commit_round` reads the final one.

CREATE TABLE round_checkpoints (
    thread_id  bigint      NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    round      integer     NOT NULL CHECK (round >= 1),
    step       integer     NOT NULL CHECK (step >= 0),
    run_id     text        NOT NULL,
    -- Temporal's attempt number of the run_graph activity that owns the round's rows.
    attempt    integer     NOT NULL CHECK (attempt >= 1),
    -- The nodes that ran in this step (empty for step 0).
    nodes      text[]      NOT NULL,
    -- firstline-graph's Checkpoint<IncidentState> as JSON.
    checkpoint jsonb       NOT NULL,
    finished   boolean     NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (thread_id, round, step)
);

-- Posting is idempotent on the round: `post_attempted_at` is set before chat.postMessage is
-- called, so a retry that finds it set and no `posted_ts` looks for its own message (by its
-- metadata) in the thread before posting again.
ALTER TABLE rounds ADD COLUMN post_attempted_at timestamptz;
-- What the round reacted to (the mention or alert that woke it) and with which reaction.
ALTER TABLE rounds ADD COLUMN reacted_ts text;
