-- Rows of `parsed` that lose to another line of the same key (see dupkeys): a repaired line
-- wins, then the later end, then the later start. Returns their rowids.
SELECT rid FROM (
    SELECT p.rowid AS rid,
        row_number() OVER (PARTITION BY p.cluster, p.job_id_raw, p.submit
            ORDER BY p.repaired DESC, p."end" DESC NULLS LAST, p."start" DESC NULLS LAST,
                     p.state_raw DESC NULLS LAST) AS rn
    FROM parsed p SEMI JOIN dupkeys d
        ON d.cluster = p.cluster AND d.job_id_raw = p.job_id_raw AND d.submit = p.submit
    WHERE p.step IS NULL AND p.bad_field IS NULL
)
WHERE rn > 1
