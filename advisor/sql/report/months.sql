-- Months (first day, UTC) in which at least one GPU allocation started, oldest first.
-- $1: cluster name or NULL for every cluster.
SELECT DISTINCT CAST(date_trunc('month', start) AS DATE) AS month_start
FROM jobs
WHERE start IS NOT NULL
  AND gpus > 0
  AND (CAST($1 AS VARCHAR) IS NULL OR cluster = CAST($1 AS VARCHAR))
ORDER BY month_start
