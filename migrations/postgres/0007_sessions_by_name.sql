-- Resume by name (`"resume": true` in POST /v1/sessions, docs/api.md) finds a tenant's
-- newest session of a name. Names are not unique: sessions made before resume existed,
-- or without it, may share one; a resume answers the newest. Same schema in
-- migrations/sqlite/0006_sessions_by_name.sql.
CREATE INDEX sessions_by_name ON sessions (tenant, name, created_micros DESC, id DESC);
