-- The rows of temp `fixed` (a bulk load's repaired allocation lines, bulk.py) whose key the
-- load has not written: they are added, the others replaced (bulk_replace_repaired.sql).
SELECT * FROM fixed AS s
WHERE NOT EXISTS (
    SELECT 1 FROM jobs j WHERE j.ingest_id = $ingest_id AND j.cluster = s.cluster
        AND j.job_id_raw = s.job_id_raw AND j.submit = s.submit)
