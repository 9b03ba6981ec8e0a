-- ingest/pressure_insert: the checked records of one pressure spool file (the Arrow table
-- ing_pressure), each kept once: a record already stored (same cluster, job, step, host and
-- collection time) changes nothing. Returns the rows inserted.
INSERT OR IGNORE INTO pressure_records BY NAME
SELECT *, $ingest_id AS ingest_id
FROM ing_pressure
