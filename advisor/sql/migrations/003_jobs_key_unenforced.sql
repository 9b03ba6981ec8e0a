-- `jobs` without its PRIMARY KEY constraint. The key (cluster, job_id_raw, submit) stays the
-- identity of a row, but the ingest keeps it unique itself (insert_new.sql and
-- replace_changed.sql match on it; a bulk load checks its rows with bulk_overlap.sql). The
-- constraint's index doubled the file (4.65M jobs: 425 MB with it, 219 MB without) and cost
-- every load about a second (bench/bench_ingest.py); no query reads through it.
-- The same columns, order and rows; the NOT NULLs and the default come back below.
CREATE TABLE jobs_unkeyed AS SELECT * FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_unkeyed RENAME TO jobs;
ALTER TABLE jobs ALTER COLUMN cluster SET NOT NULL;
ALTER TABLE jobs ALTER COLUMN job_id_raw SET NOT NULL;
ALTER TABLE jobs ALTER COLUMN submit SET NOT NULL;
ALTER TABLE jobs ALTER COLUMN job_id SET NOT NULL;
ALTER TABLE jobs ALTER COLUMN gpus SET NOT NULL;
ALTER TABLE jobs ALTER COLUMN gpus SET DEFAULT 0;
