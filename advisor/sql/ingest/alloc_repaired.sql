-- The repaired allocation lines of `parsed`, one per key (the later end wins, then the later
-- start), for a bulk load (bulk.py); with <new_only> TRUE only those whose key the load has
-- not written yet (the others update it: bulk_replace_repaired.sql). A literal, not a
-- parameter: FALSE then drops the EXISTS over the load's rows from the plan.
    SELECT * FROM parsed p
    WHERE p.repaired AND p.step IS NULL AND p.bad_field IS NULL
      AND NOT ({{new_only}} AND EXISTS (
          SELECT 1 FROM jobs j WHERE j.ingest_id = $ingest_id AND j.cluster = p.cluster
              AND j.job_id_raw = p.job_id_raw AND j.submit = p.submit))
    QUALIFY row_number() OVER (PARTITION BY p.cluster, p.job_id_raw, p.submit
        ORDER BY p."end" DESC NULLS LAST, p."start" DESC NULLS LAST, p.state_raw DESC NULLS LAST) = 1
