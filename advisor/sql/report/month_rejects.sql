-- Rejected lines of the loads that brought in one month's allocations, grouped by reason,
-- with the first place each reason was seen (file and line) so a reader can go and look.
-- $1: month start (TIMESTAMP), $2: next month start (TIMESTAMP), $3: cluster or NULL.
SELECT r.reason, r.field, count(*) AS lines,
       arg_min(r.source, r.line_no) AS first_source, min(r.line_no) AS first_line_no
FROM rejects r
WHERE r.ingest_id IN (
    SELECT DISTINCT ingest_id FROM jobs
    WHERE start >= CAST($1 AS TIMESTAMP) AND start < CAST($2 AS TIMESTAMP)
      AND (CAST($3 AS VARCHAR) IS NULL OR cluster = CAST($3 AS VARCHAR))
)
GROUP BY r.reason, r.field
ORDER BY lines DESC, r.reason
