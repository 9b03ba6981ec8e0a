-- The GPU job mix of every month, one row per (month, cluster, partition, GPU family, CPUs,
-- GPUs): jobs, elapsed seconds and GPU-hours; report/job_mix's columns and eligibility with the
-- month (UTC, by job start) and the cluster as keys, for the loss by month.
-- $clusters (VARCHAR[], empty = all); $start, $end (TIMESTAMP, UTC, NULL = open): jobs whose
-- start lies in [start, end).
SELECT
    strftime(date_trunc('month', start), '%Y-%m') AS month,
    cluster,
    "partition",
    coalesce(gpu_type, '(untyped)') AS gpu_type,
    cpus,
    gpus,
    count(*) AS jobs,
    sum(elapsed_s)::DOUBLE AS elapsed_s,
    sum(elapsed_s * gpus)::DOUBLE / 3600.0 AS gpu_hours
FROM jobs
WHERE gpus > 0 AND cpus > 0 AND elapsed_s > 0 AND start IS NOT NULL
  AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
  AND ($start::TIMESTAMP IS NULL OR start >= $start::TIMESTAMP)
  AND ($end::TIMESTAMP IS NULL OR start < $end::TIMESTAMP)
GROUP BY ALL
ORDER BY 1, 2, 3 NULLS LAST, 4, 5, 6
