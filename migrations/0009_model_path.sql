-- The model path. After the deterministic round is posted, `refine_round` lets the configured
-- model read more and summarise; its outcome replaces the round's result (the posted message is
-- then edited in place by `edit_post`). What the model did is kept as typed columns beside the
-- usage columns of 0003, so a dashboard or a test reads why a round fell back without decoding
-- the result JSON.
ALTER TABLE rounds
    -- The model asked; NULL when the round ran with no model.
    ADD COLUMN model            text,
    -- Why the round fell back to the deterministic path (`LlmError::reason`); NULL when used.
    ADD COLUMN model_fallback   text,
    ADD COLUMN model_tool_calls integer NOT NULL DEFAULT 0 CHECK (model_tool_calls >= 0),
    ADD COLUMN model_latency_ms integer NOT NULL DEFAULT 0 CHECK (model_latency_ms >= 0),
    -- Set once the model's outcome is stored: a retried `refine_round` does nothing more.
    ADD COLUMN refined_at       timestamptz,
    -- Set once the posted message shows the refined result.
    ADD COLUMN edited_at        timestamptz,
    ADD CONSTRAINT rounds_fallback_names_a_model CHECK (model_fallback IS NULL OR model IS NOT NULL),
    ADD CONSTRAINT rounds_refined_with_a_model CHECK (refined_at IS NULL OR model IS NOT NULL);

-- The model's answers per round and step, so a retried attempt replays them instead of asking
-- again (the same contract as `tool_cache` for tool calls).
CREATE TABLE model_replies (
    thread_id  bigint      NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    round      integer     NOT NULL CHECK (round >= 1),
    -- `<run>/<step>`, e.g. `…/investigate/0`, `…/summarise`.
    step       text        NOT NULL CHECK (step <> ''),
    answer     jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (thread_id, round, step)
);
