-- ratios/ecdf: per group, every distinct CPU-per-GPU ratio with the share of jobs and of
-- GPU-seconds at or below it (the empirical CDF; small: one row per distinct ratio).
-- Placeholders (facts, group keys) as in ratios/summary.
WITH facts AS (
{{facts}}
),
vals AS (
    SELECT {{keys}}, cores_per_gpu AS v, sum(jobs) AS n, sum(gpu_seconds) AS w
    FROM facts
    WHERE excluded_reason IS NULL
    GROUP BY ALL
),
grouped AS (
    SELECT *, dense_rank() OVER (ORDER BY {{keys}}) AS gid FROM vals
)
SELECT gid, {{keys}}, v AS cores_per_gpu, n AS jobs, w AS gpu_s,
       sum(n) OVER (PARTITION BY gid ORDER BY v) / sum(n) OVER (PARTITION BY gid) AS share_jobs,
       sum(w) OVER (PARTITION BY gid ORDER BY v)::DOUBLE
           / nullif(sum(w) OVER (PARTITION BY gid), 0) AS share_gpu_s
FROM grouped
ORDER BY gid, v
