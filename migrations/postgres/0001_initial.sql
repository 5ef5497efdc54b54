-- tvbo schema (PostgreSQL): the SQLite schema, plus an id standing in for rowid where rows
-- are read in insertion order. Every time column is unix
-- microseconds (BIGINT); session time t is DOUBLE PRECISION seconds; ids are UUID text and
-- JSON documents are TEXT, so that both backends read and write the same Rust values.
-- COLLATE "C": ids sort bytewise, as in SQLite (the listing cursor relies on the order).
CREATE TABLE sessions (
    id              TEXT COLLATE "C" PRIMARY KEY,
    name            TEXT NOT NULL,
    config          TEXT NOT NULL,
    created_micros  BIGINT NOT NULL,
    status          TEXT NOT NULL,
    version         BIGINT NOT NULL,
    state           TEXT NOT NULL,
    suggest_count   BIGINT NOT NULL DEFAULT 0,
    last_suggest_t  DOUBLE PRECISION,
    last_suggest_n  BIGINT
);
CREATE INDEX sessions_by_creation ON sessions (created_micros DESC, id DESC);

CREATE TABLE suggestions (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    ordinal         BIGINT NOT NULL,
    params          TEXT NOT NULL,
    unit            TEXT NOT NULL,
    arm             TEXT,
    issued_t        DOUBLE PRECISION NOT NULL,
    t               DOUBLE PRECISION NOT NULL,
    created_micros  BIGINT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'observed', 'expired'))
);
CREATE INDEX suggestions_by_session ON suggestions (session_id, status, ordinal);

CREATE TABLE observations (
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq             BIGINT NOT NULL,
    suggestion_id   TEXT UNIQUE,
    params          TEXT NOT NULL,
    unit            TEXT NOT NULL,
    value           DOUBLE PRECISION NOT NULL,
    t               DOUBLE PRECISION NOT NULL,
    measured_micros BIGINT,
    regret          DOUBLE PRECISION,
    active          BOOLEAN NOT NULL,
    removed_micros  BIGINT,
    removed_reason  TEXT,
    created_micros  BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- id stands in for SQLite's rowid: samples are read back in insertion order.
CREATE TABLE response_times (
    id              BIGSERIAL PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    n               BIGINT NOT NULL,
    seconds         DOUBLE PRECISION NOT NULL,
    recorded_micros BIGINT NOT NULL
);
CREATE INDEX response_times_by_session ON response_times (session_id);

-- id stands in for SQLite's rowid (insertion order).
CREATE TABLE calls (
    id              BIGSERIAL PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL,
    t               DOUBLE PRECISION NOT NULL,
    dataset_size    BIGINT NOT NULL,
    compute_seconds DOUBLE PRECISION NOT NULL,
    recorded_micros BIGINT NOT NULL
);
CREATE INDEX calls_by_session ON calls (session_id);

-- Stored answers of POSTs that carried an Idempotency-Key; session_id (when the request
-- concerns one) lets them go with their session.
CREATE TABLE idempotency (
    scope           TEXT NOT NULL,
    session_id      TEXT,
    key             TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    status          BIGINT NOT NULL,
    body            TEXT NOT NULL,
    created_micros  BIGINT NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_by_age ON idempotency (created_micros);
CREATE INDEX idempotency_by_session ON idempotency (session_id);
