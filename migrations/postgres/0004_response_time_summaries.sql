-- BOLT's response-time model R(n) is a least-squares cubic in n, which needs of the
-- samples at each n only their count and sum (docs/architecture.md, "The life of one observe call"). Each
-- commit that records a sample also adds it here, so an observe reads one row per
-- dataset size the session has run at, however old the session. The samples themselves
-- stay in response_times for the timeline. Same schema in
-- migrations/sqlite/0004_response_time_summaries.sql.
CREATE TABLE response_time_summaries (
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    n               BIGINT NOT NULL,
    count           BIGINT NOT NULL,
    total_seconds   DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (session_id, n)
);

INSERT INTO response_time_summaries (session_id, n, count, total_seconds)
SELECT session_id, n, COUNT(*), SUM(seconds) FROM response_times GROUP BY session_id, n;
