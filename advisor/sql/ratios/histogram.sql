-- ratios/histogram: per group, jobs and GPU-seconds in each bin [lo, hi) of CPU-per-GPU ratio.
-- $edges (DOUBLE[], ascending) are the bins' lower edges; the last bin is open ([last, inf)),
-- and ratios below the first edge fall in the first bin. Empty bins are returned with zeros.
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
