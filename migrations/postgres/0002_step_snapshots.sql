-- The dashboard's history. Observations: when each was forgotten, in session time, and
-- the regret the model estimated for it when it arrived (from the posterior optimum the
-- last suggest recorded: sessions.last_optimum_mean). Calls: what each left the model as
-- (JSON, see StepSnapshot).
ALTER TABLE observations ADD COLUMN removed_t DOUBLE PRECISION;
ALTER TABLE observations ADD COLUMN regret_estimate DOUBLE PRECISION;
ALTER TABLE sessions ADD COLUMN last_optimum_mean DOUBLE PRECISION;
ALTER TABLE calls ADD COLUMN snapshot TEXT;

-- The active observations of a session, found without reading the forgotten ones: a
-- session's load and its dataset size cost its active set, not its age.
CREATE INDEX observations_active ON observations (session_id, seq) WHERE active;
-- The latest observations of suggestions (the lead time's recent delays), found without
-- reading the client-chosen ones.
CREATE INDEX observations_of_suggestions ON observations (session_id, seq)
    WHERE suggestion_id IS NOT NULL;

-- Per-session counts of calls and response-time samples: their ordinals, which place
-- each in its timeline bucket.
ALTER TABLE sessions ADD COLUMN call_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN sample_count BIGINT NOT NULL DEFAULT 0;

-- Summaries of each series of a session's history by buckets of 64 consecutive rows,
-- kept up to date by every commit, so that the timeline reads about n/64 rows, not n.
-- series: 'o' observations (key seq; lo/hi the value, lo2/hi2 the regret, reported or
-- estimated; total, n_valued, n_reported sum and count those regrets), 'c' calls (key
-- the row id; lo/hi the dataset size), 's' response-time samples (key the row id; lo/hi
-- the seconds), 'f:<reason>' forgetting (bucket: the forgetting step's call ordinal;
-- lo/hi its first and last session time). *_key: the first row holding the extreme.
CREATE TABLE timeline_buckets (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    series      TEXT NOT NULL,
    bucket      BIGINT NOT NULL,
    first_key   BIGINT NOT NULL,
    last_key    BIGINT NOT NULL,
    count       BIGINT NOT NULL,
    lo          DOUBLE PRECISION NOT NULL,
    lo_key      BIGINT NOT NULL,
    hi          DOUBLE PRECISION NOT NULL,
    hi_key      BIGINT NOT NULL,
    lo2         DOUBLE PRECISION,
    lo2_key     BIGINT,
    hi2         DOUBLE PRECISION,
    hi2_key     BIGINT,
    total       DOUBLE PRECISION NOT NULL,
    n_valued    BIGINT NOT NULL,
    n_reported  BIGINT NOT NULL,
    PRIMARY KEY (session_id, series, bucket)
);

-- Existing history (forgetting times were not recorded before: no 'f' rows).
UPDATE sessions SET
    call_count = (SELECT COUNT(*) FROM calls c WHERE c.session_id = sessions.id),
    sample_count = (SELECT COUNT(*) FROM response_times r WHERE r.session_id = sessions.id);

INSERT INTO timeline_buckets (session_id, series, bucket, first_key, last_key, count, lo,
    lo_key, hi, hi_key, lo2, lo2_key, hi2, hi2_key, total, n_valued, n_reported)
SELECT b.session_id, 'o', b.k, b.f, b.l, b.n, b.lo,
    (SELECT MIN(x.seq) FROM observations x WHERE x.session_id = b.session_id
        AND x.seq BETWEEN b.f AND b.l AND x.value = b.lo),
    b.hi,
    (SELECT MIN(x.seq) FROM observations x WHERE x.session_id = b.session_id
        AND x.seq BETWEEN b.f AND b.l AND x.value = b.hi),
    b.rlo,
    (SELECT MIN(x.seq) FROM observations x WHERE x.session_id = b.session_id
        AND x.seq BETWEEN b.f AND b.l AND COALESCE(x.regret, x.regret_estimate) = b.rlo),
    b.rhi,
    (SELECT MIN(x.seq) FROM observations x WHERE x.session_id = b.session_id
        AND x.seq BETWEEN b.f AND b.l AND COALESCE(x.regret, x.regret_estimate) = b.rhi),
    b.total, b.nv, b.nr
FROM (SELECT session_id, (seq - 1) / 64 AS k, MIN(seq) AS f, MAX(seq) AS l, COUNT(*) AS n,
        MIN(value) AS lo, MAX(value) AS hi,
        MIN(COALESCE(regret, regret_estimate)) AS rlo,
        MAX(COALESCE(regret, regret_estimate)) AS rhi,
        COALESCE(SUM(COALESCE(regret, regret_estimate)), 0) AS total,
        COUNT(COALESCE(regret, regret_estimate)) AS nv, COUNT(regret) AS nr
    FROM observations GROUP BY session_id, (seq - 1) / 64) AS b;

INSERT INTO timeline_buckets (session_id, series, bucket, first_key, last_key, count, lo,
    lo_key, hi, hi_key, lo2, lo2_key, hi2, hi2_key, total, n_valued, n_reported)
SELECT b.session_id, 'c', b.k, b.f, b.l, b.n, b.lo,
    (SELECT MIN(x.id) FROM calls x WHERE x.session_id = b.session_id
        AND x.id BETWEEN b.f AND b.l AND x.dataset_size = b.lo),
    b.hi,
    (SELECT MIN(x.id) FROM calls x WHERE x.session_id = b.session_id
        AND x.id BETWEEN b.f AND b.l AND x.dataset_size = b.hi),
    NULL, NULL, NULL, NULL, 0, 0, 0
FROM (SELECT session_id, k, MIN(row_id) AS f, MAX(row_id) AS l, COUNT(*) AS n,
        MIN(dataset_size) AS lo, MAX(dataset_size) AS hi
    FROM (SELECT session_id, id AS row_id, dataset_size,
            (ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY id) - 1) / 64 AS k
        FROM calls) AS c
    GROUP BY session_id, k) AS b;

INSERT INTO timeline_buckets (session_id, series, bucket, first_key, last_key, count, lo,
    lo_key, hi, hi_key, lo2, lo2_key, hi2, hi2_key, total, n_valued, n_reported)
SELECT b.session_id, 's', b.k, b.f, b.l, b.n, b.lo,
    (SELECT MIN(x.id) FROM response_times x WHERE x.session_id = b.session_id
        AND x.id BETWEEN b.f AND b.l AND x.seconds = b.lo),
    b.hi,
    (SELECT MIN(x.id) FROM response_times x WHERE x.session_id = b.session_id
        AND x.id BETWEEN b.f AND b.l AND x.seconds = b.hi),
    NULL, NULL, NULL, NULL, 0, 0, 0
FROM (SELECT session_id, k, MIN(row_id) AS f, MAX(row_id) AS l, COUNT(*) AS n,
        MIN(seconds) AS lo, MAX(seconds) AS hi
    FROM (SELECT session_id, id AS row_id, seconds,
            (ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY id) - 1) / 64 AS k
        FROM response_times) AS r
    GROUP BY session_id, k) AS b;
