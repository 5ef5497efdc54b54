-- Event delivery (docs/events.md): a global id for every event, webhooks and their
-- deliveries, and what the idle scan reads. Same schema in
-- migrations/postgres/0012_webhooks.sql.
--
-- `events.id` numbers every event of the database in commit order (SQLite has one writer;
-- AUTOINCREMENT never reuses an id): the cursor of the stream `GET /v1/events`. SQLite
-- cannot add such a column in place, so the table is rebuilt with the same rows.
CREATE TABLE events_rebuilt (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    step            INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    t               REAL NOT NULL,
    data            TEXT NOT NULL,
    created_micros  INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);
INSERT INTO events_rebuilt (session_id, seq, step, kind, t, data, created_micros)
    SELECT session_id, seq, step, kind, t, data, created_micros FROM events
    ORDER BY created_micros, session_id, seq;
DROP TABLE events;
ALTER TABLE events_rebuilt RENAME TO events;

-- A tenant's webhooks. `kinds` is a JSON array of event kinds (empty: every kind);
-- `secret` signs each delivery (HMAC-SHA256), so it is kept as given.
CREATE TABLE webhooks (
    id              TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    url             TEXT NOT NULL,
    kinds           TEXT NOT NULL,
    secret          TEXT NOT NULL,
    created_micros  INTEGER NOT NULL
);
CREATE INDEX webhooks_by_tenant ON webhooks (tenant, created_micros, id);

-- One row per event and webhook that takes it, written in the event's transaction.
-- `state` is pending until a 2xx (delivered) or until retries give up (failed). A replica
-- claims a due row by setting `claimed_until_micros` (a lease: if it dies, the row is due
-- again when the lease ends). A session's rows go out in `seq` order: a row waits while an
-- earlier one of its webhook and session is pending.
CREATE TABLE webhook_deliveries (
    webhook_id            TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id              INTEGER NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    session_id            TEXT NOT NULL,
    seq                   INTEGER NOT NULL,
    state                 TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts              INTEGER NOT NULL,
    next_attempt_micros   INTEGER NOT NULL,
    claimed_until_micros  INTEGER NOT NULL,
    last_status           INTEGER,
    last_error            TEXT,
    delivered_micros      INTEGER,
    created_micros        INTEGER NOT NULL,
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
ALTER TABLE sessions ADD COLUMN last_observed_micros INTEGER;
ALTER TABLE sessions ADD COLUMN idle_seconds REAL;
ALTER TABLE sessions ADD COLUMN idle_told_micros INTEGER;
UPDATE sessions SET
    last_observed_micros = (SELECT MAX(created_micros) FROM observations o
                            WHERE o.session_id = sessions.id),
    idle_seconds = 3600;
UPDATE sessions SET idle_told_micros = last_observed_micros;
CREATE INDEX sessions_by_last_observation ON sessions (last_observed_micros)
    WHERE idle_seconds IS NOT NULL;
