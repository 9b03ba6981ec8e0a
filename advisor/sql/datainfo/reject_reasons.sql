-- Rejected records grouped by reason and field, most frequent first, with one example each.
-- $1: how many groups at most.
SELECT reason, coalesce(field, '') AS field, count(*) AS records,
       count(DISTINCT ingest_id) AS ingests,
       arg_min(source, ingest_id) AS example_source,
       arg_min(line_no, ingest_id) AS example_line_no
FROM rejects
GROUP BY reason, field
ORDER BY records DESC, reason
LIMIT $1;
