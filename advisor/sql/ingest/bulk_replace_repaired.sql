-- The repaired allocation lines of a bulk load (temp `fixed`) win over rows of the same load
-- with their key (the first half of a record a newline split, read as a record of its own):
-- those rows take the repaired values (<set>: the columns that differ, from s). An update,
-- not a delete and insert: DuckDB commits deletes among millions of fresh rows slowly.
UPDATE jobs SET {{set}}
FROM fixed AS s
WHERE jobs.ingest_id = $ingest_id AND jobs.cluster = s.cluster
  AND jobs.job_id_raw = s.job_id_raw AND jobs.submit = s.submit
