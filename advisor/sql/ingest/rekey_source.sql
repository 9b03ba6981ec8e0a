-- Array tasks of this source without JobIDRaw (a negative key, strict.sql: ing_array_key) take
-- the real raw id of the same task (cluster, array job id, task id, submit) when this source
-- or the store has it: the same task is then one key, never two rows counted twice. Steps
-- follow their allocation. Run before superseded.sql (keys.py).
CREATE OR REPLACE TEMP TABLE array_rekey AS
WITH keyless AS (
    SELECT DISTINCT cluster, array_job_id, array_task_id, submit, job_id_raw AS old_id
    FROM parsed
    WHERE job_id_raw < 0 AND step IS NULL AND bad_field IS NULL
), known AS (
    SELECT cluster, array_job_id, array_task_id, submit, job_id_raw FROM parsed
    WHERE job_id_raw >= 0 AND step IS NULL AND bad_field IS NULL AND array_task_id IS NOT NULL
    UNION ALL
    SELECT j.cluster, j.array_job_id, j.array_task_id, j.submit, j.job_id_raw FROM jobs j
    SEMI JOIN keyless k ON k.cluster = j.cluster AND k.array_job_id = j.array_job_id
        AND k.array_task_id = j.array_task_id AND k.submit = j.submit
    WHERE j.job_id_raw >= 0
)
SELECT k.cluster, k.old_id, any_value(n.job_id_raw) AS new_id
FROM keyless k
JOIN known n ON n.cluster = k.cluster AND n.array_job_id = k.array_job_id
    AND n.array_task_id = k.array_task_id AND n.submit = k.submit
GROUP BY k.cluster, k.old_id;
UPDATE parsed SET job_id_raw = r.new_id
FROM array_rekey r
WHERE parsed.cluster = r.cluster AND parsed.job_id_raw = r.old_id;
