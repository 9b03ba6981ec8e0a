-- The latest rejected records, each with where it came from and why. $1: how many at most.
SELECT ingest_id, source, line_no, coalesce(field, '') AS field, reason,
       left(coalesce(raw, ''), 300) AS raw
FROM rejects
ORDER BY ingest_id DESC, line_no
LIMIT $1;
