-- Fair webhook delivery and the circuit breaker (docs/events.md, "Delivery"). Same schema
-- in migrations/postgres/0013_webhook_breaker.sql.
--
-- A webhook's attempts that failed in a row since its last delivered one, since when, and
-- when it was paused (NULL: active) and why. A paused webhook takes no new deliveries and
-- its pending ones wait, until a delivered ping resumes it.
ALTER TABLE webhooks ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhooks ADD COLUMN failing_since_micros INTEGER;
ALTER TABLE webhooks ADD COLUMN paused_micros INTEGER;
ALTER TABLE webhooks ADD COLUMN paused_reason TEXT;

-- A webhook has at most one delivery in flight: the claim looks up its live leases.
CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries (webhook_id, claimed_until_micros)
    WHERE state = 'pending';

-- `session-idle` thresholds have a floor of 60 s (the scan runs every 15 s; a smaller
-- threshold raised an event per pause between two observations).
UPDATE sessions SET idle_seconds = 60 WHERE idle_seconds < 60;
