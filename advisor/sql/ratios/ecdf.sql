-- ratios/ecdf: per group, every distinct CPU-per-GPU ratio with the share of jobs and of
-- GPU-seconds at or below it (the empirical CDF; small: one row per distinct ratio).
-- Placeholders: values (ratios/distribution_values over the facts, rendered by advisor.ratios);
-- keys (the quoted group key columns) as in ratios/summary.
WITH grouped AS (
{{values}}
)
SELECT gid, {{keys}}, v AS cores_per_gpu, n AS jobs, w AS gpu_s,
       sum(n) OVER (PARTITION BY gid ORDER BY v) / sum(n) OVER (PARTITION BY gid) AS share_jobs,
       sum(w) OVER (PARTITION BY gid ORDER BY v)::DOUBLE
           / nullif(sum(w) OVER (PARTITION BY gid), 0) AS share_gpu_s
FROM grouped
ORDER BY gid, v
