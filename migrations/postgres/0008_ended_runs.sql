-- Runs that ended without a value (docs/api.md, "Failed and abandoned runs"): a
-- measurement the client reported failed (`"failed": true`), or a suggestion it abandoned
-- (DELETE /v1/sessions/{id}/suggestions/{sid}). They are recorded and shown, and never
-- reach the model. A suggestion takes the status of how its run ended. Same schema in
-- migrations/sqlite/0007_ended_runs.sql.
ALTER TABLE suggestions DROP CONSTRAINT suggestions_status_check;
ALTER TABLE suggestions ADD CONSTRAINT suggestions_status_check
    CHECK (status IN ('pending', 'observed', 'expired', 'failed', 'abandoned'));

-- id stands in for SQLite's rowid (order of recording). `suggestion_id` is NULL for a
-- failed setting of the client's own; `t` is session time (a failure's measurement, an
-- abandoned suggestion's target time).
CREATE TABLE ended_runs (
    id              BIGSERIAL PRIMARY KEY,
    session_id      TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    suggestion_id   TEXT,
    kind            TEXT NOT NULL CHECK (kind IN ('failed', 'abandoned')),
    params          TEXT NOT NULL,
    t               DOUBLE PRECISION NOT NULL,
    reason          TEXT,
    created_micros  BIGINT NOT NULL
);
CREATE INDEX ended_runs_by_session ON ended_runs (session_id, id);
