-- Step lines whose allocation line is not in the same source, as (rid, line_no, field, reason).
SELECT p.rid, p.line_no, 'JobID' AS field,
    'step line without its allocation line in the same source (steps are folded into it)' AS reason
FROM parsed p
WHERE p.step IS NOT NULL AND p.bad_field IS NULL
  AND NOT EXISTS (SELECT 1 FROM parsed a WHERE a.step IS NULL AND a.cluster = p.cluster
                  AND a.job_id_raw = p.job_id_raw)
