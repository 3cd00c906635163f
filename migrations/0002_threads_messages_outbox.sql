-- Slack ingress. One Slack thread is one incident conversation; every message the bot sees is a
-- row (invariant 1), deduplicated on Slack's event_id and on (channel, ts) (invariant 3), and
-- written in the same transaction as the outbox rows that publish it and wake the round
-- (invariant 2: ack after commit).

CREATE TABLE threads (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    team_id          text        NOT NULL,
    channel_id       text        NOT NULL,
    -- ts of the thread's parent message; a top-level alert opens a thread keyed by its own ts.
    thread_ts        text        NOT NULL,
    status           text        NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    opened_at        timestamptz NOT NULL DEFAULT now(),
    resolved_at      timestamptz,
    -- Rounds committed so far; the round guard (max 5) reads this.
    rounds           integer     NOT NULL DEFAULT 0 CHECK (rounds >= 0),
    last_activity_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (team_id, channel_id, thread_ts),
    CHECK ((status = 'resolved') = (resolved_at IS NOT NULL))
);

CREATE TABLE messages (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    thread_id   bigint      NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    -- Slack's event_id; NULL for messages not delivered as events (e.g. read back by API).
    event_id    text        UNIQUE,
    team_id     text        NOT NULL,
    channel_id  text        NOT NULL,
    ts          text        NOT NULL,
    thread_ts   text,
    kind        text        NOT NULL
        CHECK (kind IN ('alert', 'mention', 'chatter', 'bot_echo', 'edit', 'deletion')),
    user_id     text,
    bot_id      text,
    app_id      text,
    username    text,
    text        text        NOT NULL DEFAULT '',
    raw         jsonb       NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    -- One mention fires both app_mention and message: both carry the same (channel, ts).
    UNIQUE (channel_id, ts)
);

CREATE INDEX messages_thread_order ON messages (thread_id, ts);

CREATE TABLE outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- publish: to Kafka, for every message. wake: Temporal signal-with-start, alerts and mentions.
    kind            text        NOT NULL CHECK (kind IN ('publish', 'wake')),
    thread_id       bigint      NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    message_id      bigint      NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    payload         jsonb       NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    UNIQUE (message_id, kind)
);

-- Relays claim due rows with `WHERE sent_at IS NULL AND kind = $1 AND next_attempt_at <= now()
-- ORDER BY next_attempt_at, id FOR UPDATE SKIP LOCKED`; the partial index holds only pending rows.
CREATE INDEX outbox_pending ON outbox (kind, next_attempt_at, id) WHERE sent_at IS NULL;
