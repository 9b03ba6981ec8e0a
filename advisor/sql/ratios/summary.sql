-- ratios/summary: the rows advisor.ratios computes a summary from, over any facts (ratios/jobs_facts
-- or a cube's facts): per group and distinct (ratio, fair share), the counted jobs (n) and their
-- GPU-seconds (w), groups numbered in key order (_g, NULL keys last), each group's ratios
-- ascending; then, with _g NULL, one row per exclusion reason with its jobs, under v = minus the
-- reason's position in $reasons (one DOUBLE column stands for ratio and reason). Percentiles,
-- means and shares below thresholds are read off these rows in advisor.ratios (numpy over the
-- whole result at once: list functions per group, or windows, cost several times more for
-- thousands of groups).
-- Placeholders, fixed text chosen in advisor.ratios (never user text): facts; keys (the quoted
-- group key columns); excluded_keys (each key as "CASE WHEN excluded_reason IS NULL THEN <key>
-- END AS <key>"). Parameters: those of ratios/jobs_facts, $reasons (VARCHAR[]).
-- Counts and GPU-seconds are returned as BIGINT: exact, and fetched as plain arrays.
WITH facts AS (
{{facts}}
),
agg AS (
    SELECT {{keys}},
           CASE WHEN f.excluded_reason IS NULL THEN f.cores_per_gpu
                ELSE -list_position($reasons::VARCHAR[], f.excluded_reason) END AS cores_per_gpu,
           f.fair_share_cores_per_gpu, sum(f.jobs) AS jobs, sum(f.gpu_seconds) AS gpu_seconds
    FROM (
        -- an excluded job's keys and fair share are left out, so each reason sums to one row
        SELECT * REPLACE (
            {{excluded_keys}},
            CASE WHEN excluded_reason IS NULL THEN fair_share_cores_per_gpu END
                AS fair_share_cores_per_gpu
        )
        FROM facts
    ) AS f
    GROUP BY ALL
)
SELECT CASE WHEN cores_per_gpu > 0 THEN dense_rank() OVER (ORDER BY cores_per_gpu < 0, {{keys}})
       END AS _g,
       {{keys}}, cores_per_gpu, fair_share_cores_per_gpu, jobs::BIGINT AS jobs,
       gpu_seconds::BIGINT AS gpu_seconds
FROM agg
ORDER BY _g NULLS LAST, cores_per_gpu
