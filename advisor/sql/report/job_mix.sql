-- The month's GPU job mix, one row per (partition, GPU family, CPUs, GPUs): jobs, elapsed
-- seconds and GPU-hours. The same columns and eligibility as recommend/job_mix (jobs that ran,
-- with known CPUs and GPUs), restricted to allocations that started in the month (and cluster).
-- $start, $end: the month [start, end) in UTC (NULL = open); $cluster: NULL = every cluster.
-- {{keys}}: more keys before the row's, e.g. the month and the cluster (the loss by month), or
-- nothing.
SELECT
    {{keys}}
    "partition",
    coalesce(gpu_type, '(untyped)') AS gpu_type,
    cpus,
    gpus,
    count(*) AS jobs,
    sum(elapsed_s)::DOUBLE AS elapsed_s,
    sum(elapsed_s * gpus)::DOUBLE / 3600.0 AS gpu_hours
FROM jobs
WHERE gpus > 0 AND cpus > 0 AND elapsed_s > 0 AND start IS NOT NULL
  AND ($start::TIMESTAMP IS NULL OR start >= $start::TIMESTAMP)
  AND ($end::TIMESTAMP IS NULL OR start < $end::TIMESTAMP)
  AND ($cluster::VARCHAR IS NULL OR cluster = $cluster::VARCHAR)
GROUP BY ALL
ORDER BY ALL
