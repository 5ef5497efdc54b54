-- The client's notes on a run (`metadata` of an observation, or of a failed run: a JSON
-- object of at most 4096 bytes, docs/api.md), returned in listings and exports and never
-- read by a model. NULL: none. Same schema in migrations/sqlite/0008_run_metadata.sql.
ALTER TABLE observations ADD COLUMN metadata TEXT;
ALTER TABLE ended_runs ADD COLUMN metadata TEXT;
