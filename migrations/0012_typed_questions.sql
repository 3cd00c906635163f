-- Questions gain a kind (which namespace, which workload, since when, is this hypothesis right,
-- free text) and the choices a round discovered, so an answer — a click or a reply in people's
-- own words — is read against what was asked. They move from `text[]` to `jsonb`; a question
-- stored as a plain string reads back as free text.
ALTER TABLE rounds ADD COLUMN asked jsonb NOT NULL DEFAULT '[]';
UPDATE rounds SET asked = to_jsonb(questions);
ALTER TABLE rounds DROP COLUMN questions;

-- A thread whose latest round asked and was not grounded awaits an answer: a person's reply in
-- it wakes the next round with or without a mention. `commit_round` sets and clears it.
ALTER TABLE threads ADD COLUMN awaiting_answer boolean NOT NULL DEFAULT false;
UPDATE threads t SET awaiting_answer = true
  FROM rounds r
 WHERE r.thread_id = t.id AND NOT r.grounded AND jsonb_array_length(r.asked) > 0
   AND r.number = (SELECT max(number) FROM rounds WHERE thread_id = t.id)
   AND t.resolved_at IS NULL;

-- A click on a question's choice, or text typed into its box, is recorded like a message of its
-- own kind (its ts is the action's `action_ts`).
ALTER TABLE messages DROP CONSTRAINT messages_kind_check;
ALTER TABLE messages ADD CONSTRAINT messages_kind_check
    CHECK (kind IN ('alert', 'mention', 'chatter', 'bot_echo', 'edit', 'deletion', 'answer'));
