-- The rowids of the allocation lines of `parsed` whose key the source holds more than once
-- (dupkeys, see superseded.sql): a read of the key columns alone, so that only those rows are
-- then read whole (dup_losers.sql).
SELECT p.rowid
FROM parsed p SEMI JOIN dupkeys d
    ON d.cluster = p.cluster AND d.job_id_raw = p.job_id_raw AND d.submit = p.submit
WHERE p.step IS NULL AND p.bad_field IS NULL
ORDER BY p.rowid
