-- Rejected records in load and file order (one ingest, or all when $ingest_id is NULL).
SELECT ingest_id, source, line_no, field, reason, raw
FROM rejects
WHERE $ingest_id IS NULL OR ingest_id = $ingest_id
ORDER BY ingest_id, line_no
LIMIT $lim
