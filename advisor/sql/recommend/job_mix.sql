-- recommend/job_mix: the observed GPU job mix from jobs, one row per (partition, GPU family,
-- CPUs, GPUs): jobs, elapsed seconds, GPU-hours, the GRES type as users typed it (the most
-- common; ties to the first in sort order), time span. Only jobs that ran (elapsed > 0) with
-- known CPUs and GPUs; recommend/job_mix_months gives the same rows from job_mix_months.
-- $partition, $gpu_type (the canonical family, '(untyped)' for none): NULL = all;
-- $clusters (VARCHAR[], empty = all); $start, $end (TIMESTAMP, UTC, NULL = open): jobs whose
-- start lies in [start, end), as advisor ratios selects them.
WITH mix AS (
    SELECT "partition", coalesce(gpu_type, '(untyped)') AS gpu_type, cpus, gpus,
           lower(gpu_type_raw) AS gres_type, count(*) AS jobs, sum(elapsed_s) AS elapsed_s,
           sum(elapsed_s * gpus) AS gpu_seconds, min(start) AS first_start,
           max(coalesce("end", start + to_seconds(elapsed_s))) AS last_end
    FROM jobs
    WHERE gpus > 0 AND cpus > 0 AND elapsed_s > 0 AND start IS NOT NULL
      AND ($partition::VARCHAR IS NULL OR "partition" = $partition::VARCHAR)
      AND ($gpu_type::VARCHAR IS NULL OR coalesce(gpu_type, '(untyped)') = $gpu_type::VARCHAR)
      AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
      AND ($start::TIMESTAMP IS NULL OR start >= $start::TIMESTAMP)
      AND ($end::TIMESTAMP IS NULL OR start < $end::TIMESTAMP)
    GROUP BY ALL
)
SELECT
    "partition",
    gpu_type,
    first(gres_type ORDER BY jobs DESC, gres_type) FILTER (WHERE gres_type IS NOT NULL)
        AS gres_type,
    cpus,
    gpus,
    sum(jobs) AS jobs,
    sum(elapsed_s)::DOUBLE AS elapsed_s,
    sum(gpu_seconds)::DOUBLE / 3600.0 AS gpu_hours,
    min(first_start) AS first_start,
    max(last_end) AS last_end
FROM mix
GROUP BY ALL
ORDER BY 1 NULLS LAST, 2 NULLS LAST, 4, 5
