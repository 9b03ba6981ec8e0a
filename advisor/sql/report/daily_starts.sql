-- Allocations started per UTC day of one month, every day of the month present (0 when none).
-- $1: month start (TIMESTAMP), $2: next month start (TIMESTAMP), $3: cluster or NULL.
WITH days AS (
    SELECT CAST(unnest(generate_series(CAST($1 AS TIMESTAMP),
                                       CAST($2 AS TIMESTAMP) - INTERVAL 1 DAY,
                                       INTERVAL 1 DAY)) AS DATE) AS day
),
counts AS (
    SELECT CAST(start AS DATE) AS day, count(*) AS jobs, count(*) FILTER (WHERE gpus > 0) AS gpu_jobs
    FROM jobs
    WHERE start >= CAST($1 AS TIMESTAMP) AND start < CAST($2 AS TIMESTAMP)
      AND (CAST($3 AS VARCHAR) IS NULL OR cluster = CAST($3 AS VARCHAR))
    GROUP BY 1
)
SELECT d.day, coalesce(c.jobs, 0) AS jobs, coalesce(c.gpu_jobs, 0) AS gpu_jobs
FROM days d LEFT JOIN counts c USING (day)
ORDER BY d.day
