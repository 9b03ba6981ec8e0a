-- Step lines (the view step_rows) whose allocation line is not in the same source, as
-- (line_no, field, reason, raw_text).
SELECT p.line_no, 'JobID' AS field,
    'step line without its allocation line in the same source (steps are folded into it)' AS reason,
    p.job_id || '.' || p.step AS raw_text
FROM step_rows p
WHERE p.bad_field IS NULL
  AND NOT EXISTS (SELECT 1 FROM parsed a WHERE a.step IS NULL AND a.cluster = p.cluster
                  AND a.job_id_raw = p.job_id_raw)
