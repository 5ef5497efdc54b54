-- Every session_id takes the collation of sessions.id (COLLATE "C", for the listing
-- cursor's byte order). With the database's default collation on one side, a comparison
-- such as the session row's `o.session_id = s.id` (store::queries::SESSION_COLUMNS) was
-- made in "C", which an index built in the default collation cannot serve: PostgreSQL
-- scanned the whole observations table, every session's history, at every call. Changing a
-- column's collation rebuilds the indexes on it. SQLite compares TEXT byte by byte on
-- both sides (BINARY), so its schema needs no such change.
ALTER TABLE suggestions ALTER COLUMN session_id TYPE TEXT COLLATE "C";
ALTER TABLE observations ALTER COLUMN session_id TYPE TEXT COLLATE "C";
ALTER TABLE response_times ALTER COLUMN session_id TYPE TEXT COLLATE "C";
ALTER TABLE calls ALTER COLUMN session_id TYPE TEXT COLLATE "C";
ALTER TABLE idempotency ALTER COLUMN session_id TYPE TEXT COLLATE "C";
ALTER TABLE timeline_buckets ALTER COLUMN session_id TYPE TEXT COLLATE "C";
ALTER TABLE response_time_summaries ALTER COLUMN session_id TYPE TEXT COLLATE "C";
