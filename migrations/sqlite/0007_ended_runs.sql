-- Runs that ended without a value (docs/api.md, "Failed and abandoned runs"): a
-- measurement the client reported failed (`"failed": true`), or a suggestion it abandoned
-- (DELETE /v1/sessions/{id}/suggestions/{sid}). They are recorded and shown, and never
-- reach the model. A suggestion takes the status of how its run ended; SQLite cannot
-- change a CHECK constraint in place, so the table is rebuilt with the same columns.
-- Same schema in migrations/postgres/0008_ended_runs.sql.
CREATE TABLE suggestions_rebuilt (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    ordinal         INTEGER NOT NULL,
    params          TEXT NOT NULL,
    unit            TEXT NOT NULL,
    arm             TEXT,
    issued_t        REAL NOT NULL,
    t               REAL NOT NULL,
    created_micros  INTEGER NOT NULL,
    status          TEXT NOT NULL
        CHECK (status IN ('pending', 'observed', 'expired', 'failed', 'abandoned'))
);
INSERT INTO suggestions_rebuilt (id, session_id, ordinal, params, unit, arm, issued_t, t,
                                 created_micros, status)
    SELECT id, session_id, ordinal, params, unit, arm, issued_t, t, created_micros, status
    FROM suggestions;
DROP TABLE suggestions;
ALTER TABLE suggestions_rebuilt RENAME TO suggestions;
CREATE INDEX suggestions_by_session ON suggestions (session_id, status, ordinal);

-- In order of recording (rowid). `suggestion_id` is NULL for a failed setting of the
-- client's own; `t` is session time (a failure's measurement, an abandoned suggestion's
-- target time).
CREATE TABLE ended_runs (
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    suggestion_id   TEXT,
    kind            TEXT NOT NULL CHECK (kind IN ('failed', 'abandoned')),
    params          TEXT NOT NULL,
    t               REAL NOT NULL,
    reason          TEXT,
    created_micros  INTEGER NOT NULL
);
CREATE INDEX ended_runs_by_session ON ended_runs (session_id);
