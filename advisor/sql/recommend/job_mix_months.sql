-- recommend/job_mix_months: the rows of recommend/job_mix, summed from the derived table
-- job_mix_months (advisor.ratios.cube) instead of jobs; only for open or month-aligned bounds
-- ($start, $end: first instants of months), which select whole months.
WITH mix AS (
    SELECT "partition", gpu_type, cpus, gpus, gres_type, sum(jobs) AS jobs,
           sum(elapsed_s) AS elapsed_s, sum(gpu_seconds) AS gpu_seconds,
           min(first_start) AS first_start, max(last_end) AS last_end
    FROM job_mix_months
    WHERE ($partition::VARCHAR IS NULL OR "partition" = $partition::VARCHAR)
      AND ($gpu_type::VARCHAR IS NULL OR gpu_type = $gpu_type::VARCHAR)
      AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
      AND ($start::TIMESTAMP IS NULL OR month >= $start::TIMESTAMP)
      AND ($end::TIMESTAMP IS NULL OR month < $end::TIMESTAMP)
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
