-- tvbo schema. Every time column is unix microseconds (INTEGER); session time t is REAL seconds.
CREATE TABLE sessions (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    config          TEXT NOT NULL,
    created_micros  INTEGER NOT NULL,
    status          TEXT NOT NULL,
    version         INTEGER NOT NULL,
    state           TEXT NOT NULL,
    suggest_count   INTEGER NOT NULL DEFAULT 0,
    last_suggest_t  REAL,
    last_suggest_n  INTEGER
);
CREATE INDEX sessions_by_creation ON sessions (created_micros DESC, id DESC);

CREATE TABLE suggestions (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    ordinal         INTEGER NOT NULL,
    params          TEXT NOT NULL,
    unit            TEXT NOT NULL,
    arm             TEXT,
    issued_t        REAL NOT NULL,
    t               REAL NOT NULL,
    created_micros  INTEGER NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'observed', 'expired'))
);
CREATE INDEX suggestions_by_session ON suggestions (session_id, status, ordinal);

CREATE TABLE observations (
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    suggestion_id   TEXT UNIQUE,
    params          TEXT NOT NULL,
    unit            TEXT NOT NULL,
    value           REAL NOT NULL,
    t               REAL NOT NULL,
    measured_micros INTEGER,
    regret          REAL,
    active          INTEGER NOT NULL,
    removed_micros  INTEGER,
    removed_reason  TEXT,
    created_micros  INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE response_times (
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    n               INTEGER NOT NULL,
    seconds         REAL NOT NULL,
    recorded_micros INTEGER NOT NULL
);
CREATE INDEX response_times_by_session ON response_times (session_id);

CREATE TABLE calls (
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL,
    t               REAL NOT NULL,
    dataset_size    INTEGER NOT NULL,
    compute_seconds REAL NOT NULL,
    recorded_micros INTEGER NOT NULL
);
CREATE INDEX calls_by_session ON calls (session_id);

-- Stored answers of POSTs that carried an Idempotency-Key; session_id (when the request
-- concerns one) lets them go with their session.
CREATE TABLE idempotency (
    scope           TEXT NOT NULL,
    session_id      TEXT,
    key             TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    status          INTEGER NOT NULL,
    body            TEXT NOT NULL,
    created_micros  INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_by_age ON idempotency (created_micros);
CREATE INDEX idempotency_by_session ON idempotency (session_id);
