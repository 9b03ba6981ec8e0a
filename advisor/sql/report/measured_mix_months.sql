-- recommend/measured_mix with the month (UTC, by job start) and the cluster as keys: per
-- (month, cluster, partition, GPU family, CPUs, GPUs) the GPU-hours of the jobs whose cgroup CPU
-- pressure was measured and those GPU-hours weighted by each job's stall share (some, full).
-- $clusters (VARCHAR[], empty = all); $start, $end (TIMESTAMP, UTC, NULL = open): jobs whose
-- start lies in [start, end).
SELECT strftime(date_trunc('month', start), '%Y-%m') AS month, cluster,
       "partition", coalesce(gpu_type, '(untyped)') AS gpu_type, cpus, gpus,
       sum(elapsed_s * gpus) / 3600.0 AS gpu_hours,
       sum(elapsed_s * gpus / 3600.0 * least(psi_some_s / psi_covered_s, 1.0)) AS held_some,
       sum(elapsed_s * gpus / 3600.0 * least(coalesce(psi_full_s, 0) / psi_covered_s, 1.0))
           AS held_full
FROM jobs
WHERE gpus > 0 AND cpus > 0 AND elapsed_s > 0 AND start IS NOT NULL
  AND psi_status = 'measured' AND psi_covered_s > 0
  AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
  AND ($start::TIMESTAMP IS NULL OR start >= $start::TIMESTAMP)
  AND ($end::TIMESTAMP IS NULL OR start < $end::TIMESTAMP)
GROUP BY ALL
