-- The loads that brought in the allocations of one month, with their counts.
-- $1: month start (TIMESTAMP), $2: next month start (TIMESTAMP), $3: cluster or NULL.
SELECT i.ingest_id, i.source, i.format, i.status, i.rows_read, i.inserted, i.updated,
       i.unchanged, i.rejected, coalesce(i.missing_fields, []) AS missing_fields,
       coalesce(i.disabled_analyses, []) AS disabled_analyses
FROM ingests i
WHERE i.ingest_id IN (
    SELECT DISTINCT ingest_id FROM jobs
    WHERE start >= CAST($1 AS TIMESTAMP) AND start < CAST($2 AS TIMESTAMP)
      AND (CAST($3 AS VARCHAR) IS NULL OR cluster = CAST($3 AS VARCHAR))
)
ORDER BY i.ingest_id
