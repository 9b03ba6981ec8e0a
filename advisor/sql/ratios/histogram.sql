-- ratios/histogram: per group, jobs and GPU-seconds in each bin [lo, hi) of CPU-per-GPU ratio.
-- $edges (DOUBLE[], ascending) are the bins' lower edges; the last bin is open ([last, inf)),
-- and ratios below the first edge fall in the first bin. Empty bins are returned with zeros.
-- Placeholders: values (ratios/distribution_values over the facts, rendered by advisor.ratios);
-- keys (the quoted group key columns) as in ratios/summary.
WITH grouped AS (
{{values}}
),
edges AS (
    SELECT i AS bin, list_extract($edges::DOUBLE[], i) AS lo,
           CASE WHEN i < len($edges::DOUBLE[]) THEN list_extract($edges::DOUBLE[], i + 1) END AS hi
    FROM range(1, len($edges::DOUBLE[]) + 1) AS r(i)
),
binned AS (
    SELECT gid, greatest(1, len(list_filter($edges::DOUBLE[], lambda e: e <= v))) AS bin,
           sum(n) AS n, sum(w) AS w
    FROM grouped
    GROUP BY ALL
),
group_keys AS (
    SELECT DISTINCT gid, {{keys}} FROM grouped
)
SELECT k.*, e.lo, e.hi, coalesce(b.n, 0) AS jobs, coalesce(b.w, 0) AS gpu_s
FROM group_keys AS k
CROSS JOIN edges AS e
LEFT JOIN binned AS b ON b.gid = k.gid AND b.bin = e.bin
ORDER BY k.gid, e.bin
