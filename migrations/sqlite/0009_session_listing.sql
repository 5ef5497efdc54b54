-- The session listing's filters and sorts (GET /v1/sessions, docs/api.md): what each
-- session row carries so that a page is read through an index, whatever the number of
-- sessions or the length of their histories. Kept up to date by every commit
-- (store/commit.rs). Same schema in migrations/postgres/0010_session_listing.sql.
--
-- algorithm: the configuration's algorithm name (`bolt`, ...), for the `algorithm`
-- filter; NULL where the stored configuration does not parse.
-- observation_count: the largest seq, i.e. the observations ever recorded (the
-- session's `observation_count`), for the `observations` sort.
-- last_activity_micros, last_activity_t: the wall-clock time and the session time of the
-- newest step (a suggest or an observe call; the time of creation and NULL before the
-- first), for the `last_activity` sort and the listing's summary.
ALTER TABLE sessions ADD COLUMN algorithm TEXT;
ALTER TABLE sessions ADD COLUMN observation_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN last_activity_micros INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN last_activity_t REAL;

-- Existing sessions.
UPDATE sessions SET
    algorithm = CASE WHEN json_valid(config)
        THEN json_extract(config, '$.algorithm.name') END,
    observation_count = (SELECT COALESCE(MAX(o.seq), 0) FROM observations o
        WHERE o.session_id = sessions.id),
    last_activity_micros = COALESCE((SELECT c.recorded_micros FROM calls c
        WHERE c.session_id = sessions.id ORDER BY c.rowid DESC LIMIT 1), created_micros),
    last_activity_t = (SELECT c.t FROM calls c
        WHERE c.session_id = sessions.id ORDER BY c.rowid DESC LIMIT 1);

-- A tenant's sessions in each order a listing may ask for, ties broken by id (the
-- creation order has sessions_by_tenant). The name sort folds case.
CREATE INDEX sessions_by_activity ON sessions (tenant, last_activity_micros, id);
CREATE INDEX sessions_by_observation_count ON sessions (tenant, observation_count, id);
CREATE INDEX sessions_by_folded_name ON sessions (tenant, lower(name), id);
