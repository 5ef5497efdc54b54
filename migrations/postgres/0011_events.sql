-- Drift events (docs/events.md): what a step found worth telling the operator, written in
-- the step's transaction (an outbox). `seq` counts a session's events from 1 in commit
-- order (the session's row lock, taken by the step's version bump, orders them); `step`
-- is the id of the call that found the event; `t` is session time; `data`
-- is the kind's JSON. Same schema in migrations/sqlite/0010_events.sql.
CREATE TABLE events (
    session_id      TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq             BIGINT NOT NULL,
    step            BIGINT NOT NULL,
    kind            TEXT NOT NULL,
    t               DOUBLE PRECISION NOT NULL,
    data            TEXT NOT NULL,
    created_micros  BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
