-- The ingest log, newest first. $1: how many rows at most.
SELECT ingest_id, source, format, compression, cluster, started_at, finished_at,
       date_diff('millisecond', started_at, finished_at) / 1000.0 AS duration_s,
       status, rows_read, lines_read, inserted, updated, unchanged, rejected,
       coalesce(array_to_string(missing_fields, ', '), '') AS missing_fields,
       coalesce(array_to_string(disabled_analyses, ', '), '') AS disabled_analyses
FROM ingests
ORDER BY ingest_id DESC
LIMIT $1;
