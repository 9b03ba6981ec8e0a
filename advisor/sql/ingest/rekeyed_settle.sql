-- The rekeyed rows the upsert left as they were: they changed (their key), so they are this
-- load's updates. Returns the count.
UPDATE jobs SET ingest_id = $ingest_id, updated_at = timezone('UTC', now())
FROM rekeyed r
WHERE jobs.cluster = r.cluster AND jobs.job_id_raw = r.job_id_raw AND jobs.submit = r.submit
  AND jobs.ingest_id <> $ingest_id
