-- The ingest log, newest first.
SELECT ingest_id, source, format, compression, cluster, source_tz, started_at, finished_at,
    lines_read, rows_read, inserted, updated, unchanged, rejected, missing_fields,
    disabled_analyses, status, content_hash
FROM ingests
ORDER BY ingest_id DESC
LIMIT $lim
