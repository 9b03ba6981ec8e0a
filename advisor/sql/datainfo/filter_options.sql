-- The values the dashboard's filters offer: every (cluster, partition, GPU type) with job
-- counts, and the submit-time range of each. GPU type is NULL for CPU-only jobs.
SELECT cluster, "partition" AS partition, CASE WHEN gpus > 0 THEN gpu_type END AS gpu_type,
       count(*) AS jobs,
       min(submit) FILTER (WHERE submit > TIMESTAMP '1970-01-01') AS first_submit,
       max(submit) AS last_submit
FROM jobs
GROUP BY ALL
ORDER BY jobs DESC;
