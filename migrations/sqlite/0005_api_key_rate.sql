-- A key's own request rate (`tvbo keys create --rate N`, docs/security.md): requests per
-- second on `/v1`, on average, in bursts of twice that; NULL: the server's TVBO_RATE_LIMIT.
-- Same schema in migrations/postgres/0006_api_key_rate.sql.
ALTER TABLE api_keys ADD COLUMN rate_limit INTEGER;
