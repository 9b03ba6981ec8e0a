-- Stored array tasks kept under a key built from JobID (a source without JobIDRaw: negative
-- job_id_raw) take the real raw id this source brings for the same task (cluster, array job
-- id, task id, submit); the upsert then updates that row instead of inserting the task again.
-- In the load's transaction (keys.py). Returns the new keys.
UPDATE jobs SET job_id_raw = p.job_id_raw
FROM (
    SELECT cluster, array_job_id, array_task_id, submit, any_value(job_id_raw) AS job_id_raw
    FROM parsed
    WHERE job_id_raw >= 0 AND step IS NULL AND bad_field IS NULL AND array_task_id IS NOT NULL
    GROUP BY ALL
) AS p
WHERE jobs.job_id_raw < 0 AND jobs.cluster = p.cluster AND jobs.array_job_id = p.array_job_id
  AND jobs.array_task_id = p.array_task_id AND jobs.submit = p.submit
RETURNING jobs.cluster, jobs.job_id_raw, jobs.submit
