-- Whether this load wrote array tasks keyed by their JobID (no raw id: strict.sql).
SELECT count(*) FROM (SELECT 1 FROM jobs WHERE ingest_id = $ingest_id AND job_id_raw < 0 LIMIT 1)
