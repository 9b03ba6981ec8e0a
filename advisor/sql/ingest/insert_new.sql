-- Insert the allocations whose key is not stored yet (columns: the view `stage`, fold.sql).
-- Parameter: $ingest_id. Returns the count.
INSERT INTO jobs BY NAME
SELECT s.*, $ingest_id AS ingest_id, timezone('UTC', now()) AS updated_at
FROM stage s
WHERE NOT EXISTS (SELECT 1 FROM jobs j
                  WHERE j.cluster = s.cluster AND j.job_id_raw = s.job_id_raw AND j.submit = s.submit)
