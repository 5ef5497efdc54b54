-- Drift events (docs/events.md): what a step found worth telling the operator, written in
-- the step's transaction (an outbox). `seq` counts a session's events from 1 in commit
-- order; `step` is the id of the call that found the event (its rowid); `t` is session
-- time; `data` is the kind's JSON. Same schema in migrations/postgres/0011_events.sql.
CREATE TABLE events (
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    step            INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    t               REAL NOT NULL,
    data            TEXT NOT NULL,
    created_micros  INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
);
