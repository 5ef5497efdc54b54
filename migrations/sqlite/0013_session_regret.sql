-- The session listing's `regret` sort (GET /v1/sessions?sort=regret, docs/api.md): each
-- session's regrets (reported, else estimated when the observation arrived; every
-- observation, active or forgotten) summed and counted on its row, and their mean, kept
-- up to date by every commit (store/commit.rs) as the timeline's buckets are. Same schema
-- in migrations/postgres/0014_session_regret.sql. Only adds: the release before reads on.
--
-- average_regret: regret_total / regret_count, NULL without any regret (the listing sorts
-- such a session below every mean).
ALTER TABLE sessions ADD COLUMN regret_total REAL NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN regret_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN average_regret REAL;

-- Existing sessions, from the timeline's summaries of their observations.
UPDATE sessions SET
    regret_total = COALESCE((SELECT SUM(b.total) FROM timeline_buckets b
        WHERE b.session_id = sessions.id AND b.series = 'o'), 0),
    regret_count = COALESCE((SELECT SUM(b.n_valued) FROM timeline_buckets b
        WHERE b.session_id = sessions.id AND b.series = 'o'), 0);
UPDATE sessions SET average_regret = regret_total / regret_count WHERE regret_count > 0;

CREATE INDEX sessions_by_average_regret
    ON sessions (tenant, (COALESCE(average_regret, -1.0e300)), id);
