-- ratios/distribution_values: per group, every distinct counted CPU-per-GPU ratio (v) with its
-- jobs (n) and GPU-seconds (w), groups numbered in key order (gid): the relation that
-- ratios/histogram and ratios/ecdf both read, as their {{values}}.
-- Placeholders (facts, group keys) as in ratios/summary.
WITH facts AS (
{{facts}}
),
vals AS (
    SELECT {{keys}}, cores_per_gpu AS v, sum(jobs) AS n, sum(gpu_seconds) AS w
    FROM facts
    WHERE excluded_reason IS NULL
    GROUP BY ALL
)
SELECT *, dense_rank() OVER (ORDER BY {{keys}}) AS gid FROM vals
