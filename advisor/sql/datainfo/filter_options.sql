-- The values the dashboard's filters offer: every (cluster, partition, GPU type) with job
-- counts, and the time span (start time, else submit time, as advisor.ratios filters on).
-- GPU type is NULL for CPU-only jobs.
SELECT cluster, "partition" AS partition, CASE WHEN gpus > 0 THEN gpu_type END AS gpu_type,
       count(*) AS jobs,
       min(coalesce(start, submit)) FILTER (WHERE coalesce(start, submit) > TIMESTAMP '1970-01-01')
           AS first_time,
       max(coalesce(start, submit)) AS last_time
FROM jobs
GROUP BY ALL
ORDER BY jobs DESC;
