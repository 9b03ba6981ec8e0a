-- Gaps in the accounting data of one month: runs of whole UTC days on which no allocation
-- started, within the span the database covers (days after its last record are not gaps,
-- the month may still be running). Gaps-and-islands over the empty days.
-- $1: month start (TIMESTAMP), $2: next month start (TIMESTAMP), $3: cluster or NULL.
WITH bounds AS (
    SELECT CAST(min(start) AS DATE) AS first_day, CAST(max(start) AS DATE) AS last_day
    FROM jobs
    WHERE start IS NOT NULL
      AND (CAST($3 AS VARCHAR) IS NULL OR cluster = CAST($3 AS VARCHAR))
),
days AS (
    SELECT CAST(unnest(generate_series(CAST($1 AS TIMESTAMP),
                                       CAST($2 AS TIMESTAMP) - INTERVAL 1 DAY,
                                       INTERVAL 1 DAY)) AS DATE) AS day
),
seen AS (
    SELECT DISTINCT CAST(start AS DATE) AS day
    FROM jobs
    WHERE start >= CAST($1 AS TIMESTAMP) AND start < CAST($2 AS TIMESTAMP)
      AND (CAST($3 AS VARCHAR) IS NULL OR cluster = CAST($3 AS VARCHAR))
),
empty AS (
    SELECT d.day,
           d.day - CAST(row_number() OVER (ORDER BY d.day) AS INTEGER) AS island
    FROM days d, bounds b
    WHERE d.day NOT IN (SELECT day FROM seen)
      AND d.day >= b.first_day AND d.day <= b.last_day
)
SELECT min(day) AS first_day, max(day) AS last_day, count(*) AS days
FROM empty
GROUP BY island
ORDER BY first_day
