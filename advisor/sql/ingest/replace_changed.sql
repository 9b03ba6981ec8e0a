-- Replace stored allocations that this source changed (a later state, a fix), except that a
-- finished stored row is never replaced by an unfinished one (a stale snapshot loaded late).
-- Only the columns the source has are written: <row> is `s.*` (the view `stage`, fold.sql)
-- with the columns the source lacks taken from the stored row, and the interactive verdict
-- kept when the stored one rests on stronger evidence; <new> / <old> are the compared
-- columns and <set> assigns every column but the key from `r` (careful._merge_parts
-- builds all four from model.JOB_COLUMN_SOURCES). An update in place: `jobs` has no
-- constraint to replace by (migration 011).
-- Runs before insert_new. Parameter: $ingest_id. Returns the count.
UPDATE jobs SET {{set}}, ingest_id = $ingest_id, updated_at = timezone('UTC', now())
FROM (
    SELECT {{row}}
    FROM stage s
    JOIN jobs j ON j.cluster = s.cluster AND j.job_id_raw = s.job_id_raw AND j.submit = s.submit
    WHERE NOT (({{new}}) IS NOT DISTINCT FROM ({{old}}))
      AND NOT (j."end" IS NOT NULL AND s."end" IS NULL
               AND list_contains(['RUNNING', 'PENDING', 'SUSPENDED', 'REQUEUED', 'RESIZING', ''], coalesce(s.state, '')))
) AS r
WHERE jobs.cluster = r.cluster AND jobs.job_id_raw = r.job_id_raw AND jobs.submit = r.submit
