-- The repaired allocation lines of a bulk load (bulk.py) win over rows of the same load with
-- their key (the first half of a record a newline split, read as a record of its own), as in
-- losers.sql: those rows take the repaired values (the set placeholder: every column but the
-- key, from s, the repaired rows through fold.sql: the rows placeholder). An update, not a delete
-- and insert: DuckDB commits deletes among millions of fresh rows slowly.
-- Parameter: $ingest_id. Returns the count.
UPDATE jobs SET {{set}}
FROM {{rows}} AS s
WHERE jobs.ingest_id = $ingest_id AND jobs.cluster = s.cluster
  AND jobs.job_id_raw = s.job_id_raw AND jobs.submit = s.submit
