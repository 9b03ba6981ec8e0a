-- The repaired allocation lines of `parsed`, one per key (the later end wins, then the later
-- start), for a bulk load (bulk.py: temp `fixed`).
    SELECT * FROM parsed p
    WHERE p.repaired AND p.step IS NULL AND p.bad_field IS NULL
    QUALIFY row_number() OVER (PARTITION BY p.cluster, p.job_id_raw, p.submit
        ORDER BY p."end" DESC NULLS LAST, p."start" DESC NULLS LAST, p.state_raw DESC NULLS LAST) = 1
