-- API keys and tenants (docs/security.md). A key is `tvbo_<id>_<secret>`: `id` finds its
-- row, `secret_hash` is the Argon2id PHC string of the secret (never the secret itself).
-- Every session belongs to a tenant; sessions made before keys existed, or with
-- authentication off, belong to the tenant 'default'. Same schema in
-- migrations/postgres/0003_api_keys.sql.
CREATE TABLE api_keys (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    tenant          TEXT NOT NULL,
    admin           BOOLEAN NOT NULL,
    secret_hash     TEXT NOT NULL,
    created_micros  INTEGER NOT NULL,
    revoked_micros  INTEGER
);

ALTER TABLE sessions ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
-- A tenant's listing, newest first, and its session count.
CREATE INDEX sessions_by_tenant ON sessions (tenant, created_micros DESC, id DESC);
