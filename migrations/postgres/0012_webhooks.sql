-- Event delivery (docs/events.md): a global id for every event, webhooks and their
-- deliveries, and what the idle scan reads. Same schema in
-- migrations/sqlite/0011_webhooks.sql.
--
-- `events.id` numbers every event of the database from a sequence: the cursor of the
-- stream `GET /v1/events`. Concurrent transactions may commit their ids out of order; the
-- stream waits for a gap to fill or age (src/session/stream.rs).
ALTER TABLE events ADD COLUMN id BIGSERIAL;
ALTER TABLE events ADD CONSTRAINT events_id_key UNIQUE (id);

-- A tenant's webhooks. `kinds` is a JSON array of event kinds (empty: every kind);
-- `secret` signs each delivery (HMAC-SHA256), so it is kept as given.
CREATE TABLE webhooks (
    id              TEXT COLLATE "C" PRIMARY KEY,
    tenant          TEXT NOT NULL,
    url             TEXT NOT NULL,
    kinds           TEXT NOT NULL,
    secret          TEXT NOT NULL,
    created_micros  BIGINT NOT NULL
);
CREATE INDEX webhooks_by_tenant ON webhooks (tenant, created_micros, id);

-- One row per event and webhook that takes it, written in the event's transaction.
-- `state` is pending until a 2xx (delivered) or until retries give up (failed). A replica
-- claims a due row (`FOR UPDATE SKIP LOCKED`) by setting `claimed_until_micros` (a lease:
-- if it dies, the row is due again when the lease ends). A session's rows go out in `seq`
-- order: a row waits while an earlier one of its webhook and session is pending.
CREATE TABLE webhook_deliveries (
    webhook_id            TEXT COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id              BIGINT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    session_id            TEXT COLLATE "C" NOT NULL,
    seq                   BIGINT NOT NULL,
    state                 TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts              BIGINT NOT NULL,
    next_attempt_micros   BIGINT NOT NULL,
    claimed_until_micros  BIGINT NOT NULL,
    last_status           BIGINT,
    last_error            TEXT,
    delivered_micros      BIGINT,
    created_micros        BIGINT NOT NULL,
    PRIMARY KEY (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_micros)
    WHERE state = 'pending';
CREATE INDEX webhook_deliveries_in_order ON webhook_deliveries (webhook_id, session_id, seq)
    WHERE state = 'pending';
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id);

-- The idle scan (`session-idle`): when the newest observation was committed, the
-- session's threshold (NULL: off), and which silence the scan last told of (the
-- `last_observed_micros` it began at: one event per silence). Sessions of
-- before this migration take the default threshold and count as told of their present
-- silence (an upgrade does not flood a webhook with the idle sessions of the past).
ALTER TABLE sessions ADD COLUMN last_observed_micros BIGINT;
ALTER TABLE sessions ADD COLUMN idle_seconds DOUBLE PRECISION;
ALTER TABLE sessions ADD COLUMN idle_told_micros BIGINT;
UPDATE sessions SET
    last_observed_micros = (SELECT MAX(created_micros) FROM observations o
                            WHERE o.session_id = sessions.id),
    idle_seconds = 3600;
UPDATE sessions SET idle_told_micros = last_observed_micros;
CREATE INDEX sessions_by_last_observation ON sessions (last_observed_micros)
    WHERE idle_seconds IS NOT NULL;
