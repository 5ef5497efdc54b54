-- The session listing's filters and sorts (GET /v1/sessions, docs/api.md): what each
-- session row carries so that a page is read through an index, whatever the number of
-- sessions or the length of their histories. Kept up to date by every commit
-- (store/commit.rs). Same schema in migrations/sqlite/0009_session_listing.sql.
--
-- algorithm: the configuration's algorithm name (`bolt`, ...), for the `algorithm`
-- filter; NULL where the stored configuration does not parse.
-- observation_count: the largest seq, i.e. the observations ever recorded (the
-- session's `observation_count`), for the `observations` sort.
-- last_activity_micros, last_activity_t: the wall-clock time and the session time of the
-- newest step (a suggest or an observe call; the time of creation and NULL before the
-- first), for the `last_activity` sort and the listing's summary.
ALTER TABLE sessions ADD COLUMN algorithm TEXT;
ALTER TABLE sessions ADD COLUMN observation_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN last_activity_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN last_activity_t DOUBLE PRECISION;

-- Existing sessions.
UPDATE sessions SET
    observation_count = (SELECT COALESCE(MAX(o.seq), 0) FROM observations o
        WHERE o.session_id = sessions.id),
    last_activity_micros = COALESCE((SELECT c.recorded_micros FROM calls c
        WHERE c.session_id = sessions.id ORDER BY c.id DESC LIMIT 1), created_micros),
    last_activity_t = (SELECT c.t FROM calls c
        WHERE c.session_id = sessions.id ORDER BY c.id DESC LIMIT 1);
-- A configuration that is not JSON (edited by hand) leaves its session's algorithm NULL
-- rather than failing the migration: PostgreSQL 15 has no cast that answers NULL.
DO $$
DECLARE
    stored RECORD;
BEGIN
    FOR stored IN SELECT id, config FROM sessions LOOP
        BEGIN
            UPDATE sessions SET algorithm = stored.config::jsonb -> 'algorithm' ->> 'name'
            WHERE id = stored.id;
        EXCEPTION WHEN others THEN
            NULL;
        END;
    END LOOP;
END
$$;

-- A tenant's sessions in each order a listing may ask for, ties broken by id (the
-- creation order has sessions_by_tenant). The name sort folds case.
CREATE INDEX sessions_by_activity ON sessions (tenant, last_activity_micros, id);
CREATE INDEX sessions_by_observation_count ON sessions (tenant, observation_count, id);
CREATE INDEX sessions_by_folded_name ON sessions (tenant, lower(name), id);
