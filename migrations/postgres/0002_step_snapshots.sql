-- The dashboard's history. Observations: when each was forgotten, in session time, and
-- the regret the model estimated for it when it arrived (from the posterior optimum the
-- last suggest recorded: sessions.last_optimum_mean). Calls: what each left the model as
-- (JSON, see StepSnapshot).
ALTER TABLE observations ADD COLUMN removed_t DOUBLE PRECISION;
ALTER TABLE observations ADD COLUMN regret_estimate DOUBLE PRECISION;
ALTER TABLE sessions ADD COLUMN last_optimum_mean DOUBLE PRECISION;
ALTER TABLE calls ADD COLUMN snapshot TEXT;
