-- Storms: alerts that share a cause are one incident group with one analysis. Every firing alert's
-- thread belongs to exactly one group (the primary key of group_members): the first alert of a
-- group is its primary and gets the full analysis; a later alert joins an open group of its
-- channel, within `grouping.window_secs` of the group's latest alert, when it is the same alert
-- (same fingerprint: alertname and identifying labels) or when its own round finds the group's
-- root (`root_key`: the same node, workload, dependency or volume). Linking runs under one
-- advisory lock per workspace, so it is decided once per alert whatever the order of arrival and
-- however many bots and workers run.
CREATE TABLE incident_groups (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    team_id           text        NOT NULL,
    -- A storm lands in one channel: alerts of two channels (prod and staging, two teams) are
    -- never taken for one incident.
    channel_id        text        NOT NULL,
    primary_thread_id bigint      NOT NULL UNIQUE REFERENCES threads (id) ON DELETE CASCADE,
    opened_at         timestamptz NOT NULL DEFAULT now(),
    -- The window slides with the group's newest alert.
    last_alert_at     timestamptz NOT NULL DEFAULT now(),
    -- The root finding the primary's round named (kind, cluster, namespace and name), and its title.
    root_key          text,
    root_title        text,
    -- How a later alert may be shown to share the root without a round of its own (a NotReady
    -- node: every pod on it), as `firstline_investigation::sharing::Sharing` in JSON.
    sharing           jsonb,
    -- Linked alerts the primary's reply shows (it is edited when more have joined).
    shown             integer     NOT NULL DEFAULT 0 CHECK (shown >= 0),
    status            text        NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    resolved_at       timestamptz,
    CHECK ((status = 'resolved') = (resolved_at IS NOT NULL)),
    CHECK ((root_key IS NULL) = (root_title IS NULL))
);

CREATE INDEX incident_groups_open ON incident_groups (team_id, channel_id, last_alert_at)
    WHERE status = 'open';

CREATE TABLE group_members (
    thread_id         bigint      PRIMARY KEY REFERENCES threads (id) ON DELETE CASCADE,
    group_id          bigint      NOT NULL REFERENCES incident_groups (id) ON DELETE CASCADE,
    team_id           text        NOT NULL,
    reason            text        NOT NULL CHECK (reason IN ('primary', 'same_alert', 'same_root')),
    -- The alert's identity (sha256 of its alertname and identifying labels); NULL when the
    -- message names no alert (it is then never linked as a repeat).
    fingerprint       text        CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    -- The alert's first line, for the primary's list, and its link (chat.getPermalink), read
    -- once by the first reply that links to it.
    title             text        NOT NULL,
    permalink         text,
    -- A same_root member's own evidence for the shared root (`E3: pod … on node …`).
    evidence          text,
    linked_at         timestamptz NOT NULL DEFAULT now(),
    -- The member's one-line reply, posted once: marked before posting, so a retry that finds the
    -- mark and no ts looks for its own earlier reply instead of posting again.
    link_attempted_at timestamptz,
    link_ts           text,
    -- A recovery of a linked alert after its group was resolved: recorded, not announced again.
    recovered_at      timestamptz,
    CHECK ((reason = 'same_root') = (evidence IS NOT NULL))
);

CREATE INDEX group_members_fingerprint ON group_members (team_id, fingerprint, linked_at DESC)
    WHERE fingerprint IS NOT NULL;
CREATE INDEX group_members_group ON group_members (group_id, linked_at DESC);

-- Recall sees a group as one incident with its alert count.
ALTER TABLE incidents ADD COLUMN alert_count integer NOT NULL DEFAULT 1 CHECK (alert_count >= 1);
