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
           CASE WHEN f.excluded_reason IS NULL THEN f.v
                ELSE -list_position($reasons::VARCHAR[], f.excluded_reason) END AS v,
           f.fs, sum(f.n) AS n, sum(f.w) AS w
    FROM (
        -- an excluded job's keys and fair share are left out, so each reason sums to one row
        SELECT * REPLACE ({{excluded_keys}}, CASE WHEN excluded_reason IS NULL THEN fs END AS fs)
        FROM facts
    ) AS f
    GROUP BY ALL
)
SELECT CASE WHEN v > 0 THEN dense_rank() OVER (ORDER BY v < 0, {{keys}}) END AS _g, {{keys}},
       v, fs, n::BIGINT AS n, w::BIGINT AS w
FROM agg
ORDER BY _g NULLS LAST, v
