-- recommend/job_mix: the observed GPU job mix, one row per (partition, GPU family, CPUs, GPUs):
-- jobs, elapsed seconds, GPU-hours, the GRES type as users typed it (the most common; ties to
-- the first in sort order), time span. {{mix}}: the same sums per GRES spelling, from jobs
-- (recommend/job_mix_jobs) or from the derived job_mix_months (recommend/job_mix_months), which
-- give the same rows.
-- $partition, $gpu_type (the canonical family, '(untyped)' for none): NULL = all;
-- $clusters (VARCHAR[], empty = all); $start, $end (TIMESTAMP, UTC, NULL = open): jobs whose
-- start lies in [start, end), as advisor ratios selects them.
WITH mix AS (
{{mix}}
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
