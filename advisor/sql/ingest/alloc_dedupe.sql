-- Allocation lines of `parsed`, one per key: when the source holds a key twice (see
-- superseded.sql: dupkeys), a repaired line wins, then the later end, then the later start.
    SELECT p.* FROM parsed p
    WHERE p.step IS NULL AND p.bad_field IS NULL
      AND NOT EXISTS (SELECT 1 FROM dupkeys d WHERE d.cluster = p.cluster
                      AND d.job_id_raw = p.job_id_raw AND d.submit = p.submit)
    UNION ALL
    SELECT * FROM (
        SELECT p.* FROM parsed p SEMI JOIN dupkeys d
            ON d.cluster = p.cluster AND d.job_id_raw = p.job_id_raw AND d.submit = p.submit
        WHERE p.step IS NULL AND p.bad_field IS NULL
        QUALIFY row_number() OVER (PARTITION BY p.cluster, p.job_id_raw, p.submit
            ORDER BY p.repaired DESC, p."end" DESC NULLS LAST, p."start" DESC NULLS LAST,
                     p.state_raw DESC NULLS LAST) = 1)
