-- Step lines of a bulk load whose allocation line is not in the same source, as (line_no,
-- field, reason, raw_text): no row of ingest $ingest_id and no unparsable allocation line in
-- `parsed` has their job (orphan_steps.sql is the careful way's check, without the rows of
-- `jobs`); the steps are the view step_rows.
SELECT p.line_no, 'JobID' AS field,
    'step line without its allocation line in the same source (steps are folded into it)' AS reason,
    p.job_id || '.' || p.step AS raw_text
FROM step_rows p
WHERE p.bad_field IS NULL
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.ingest_id = $ingest_id
                  AND j.cluster = p.cluster AND j.job_id_raw = p.job_id_raw)
  AND NOT EXISTS (SELECT 1 FROM parsed a WHERE a.step IS NULL AND a.cluster = p.cluster
                  AND a.job_id_raw = p.job_id_raw)
