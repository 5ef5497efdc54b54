-- The dashboard's history: when each observation was forgotten, in session time, and
-- what each call left the model as (JSON, see StepSnapshot).
ALTER TABLE observations ADD COLUMN removed_t REAL;
ALTER TABLE calls ADD COLUMN snapshot TEXT;
