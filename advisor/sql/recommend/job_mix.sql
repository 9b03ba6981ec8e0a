-- recommend/job_mix: the observed GPU job mix, one row per (partition, GPU family, CPUs, GPUs):
-- jobs, elapsed seconds, GPU-hours, the GRES type as users typed it (most common), time span.
-- Only jobs that ran (elapsed > 0) with known CPUs and GPUs.
-- $partition, $gpu_type: NULL = all (GPU type: the canonical family, '(untyped)' for none, as in ratios/eligible).
-- $clusters (VARCHAR[], empty = all); $start, $end (TIMESTAMP, UTC, NULL = open): jobs whose
-- start lies in [start, end), as advisor ratios selects them.
SELECT
    "partition",
    coalesce(gpu_type, '(untyped)') AS gpu_type,
    mode(lower(gpu_type_raw)) AS gres_type,
    cpus,
    gpus,
    count(*) AS jobs,
    sum(elapsed_s)::DOUBLE AS elapsed_s,
    sum(elapsed_s * gpus)::DOUBLE / 3600.0 AS gpu_hours,
    min(start) AS first_start,
    max(coalesce("end", start + to_seconds(elapsed_s))) AS last_end
FROM jobs
WHERE gpus > 0 AND cpus > 0 AND elapsed_s > 0 AND start IS NOT NULL
  AND ($partition::VARCHAR IS NULL OR "partition" = $partition::VARCHAR)
  AND ($gpu_type::VARCHAR IS NULL OR coalesce(gpu_type, '(untyped)') = $gpu_type::VARCHAR)
  AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
  AND ($start::TIMESTAMP IS NULL OR start >= $start::TIMESTAMP)
  AND ($end::TIMESTAMP IS NULL OR start < $end::TIMESTAMP)
GROUP BY ALL
ORDER BY 1 NULLS LAST, 2 NULLS LAST, 4, 5
