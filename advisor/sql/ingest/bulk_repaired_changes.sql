-- For each column of `jobs` (the changed placeholder: one bool_or per column), whether a repaired
-- allocation line of a bulk load (temp `fixed`, bulk.py) holds another value than the row of
-- its key that the load already wrote (ingest $ingest_id). One row.
SELECT {{changed}}
FROM jobs j
JOIN fixed s ON j.cluster = s.cluster AND j.job_id_raw = s.job_id_raw AND j.submit = s.submit
WHERE j.ingest_id = $ingest_id
