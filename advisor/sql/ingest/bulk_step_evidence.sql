-- After repaired step lines joined `parsed` in a bulk load (bulk.py): the interactive verdict
-- of the rows of ingest $ingest_id whose steps <steps> holds (those jobs', step_flags.sql),
-- again from all their steps (fold.sql gave it before those lines were read; macros.sql:
-- ing_interactive). Only rows whose verdict changes: an update of a row the load wrote makes
-- the commit write every row of the load to the WAL. Returns the count.
UPDATE jobs SET is_interactive = s.is_interactive, interactive_evidence = s.interactive_evidence
FROM (
    SELECT j.cluster, j.job_id_raw, j.submit,
        ing_interactive(ing_cmd(j.submit_line), j.submit_line,
                        st.has_interactive, st.has_batch, j.job_name) AS is_interactive,
        ing_interactive_evidence(ing_cmd(j.submit_line),
                                 st.has_interactive, st.has_batch, j.job_name) AS interactive_evidence
    FROM jobs j JOIN ({{steps}}) AS st ON j.cluster = st.cluster AND j.job_id_raw = st.job_id_raw
    WHERE j.ingest_id = $ingest_id
) AS s
WHERE jobs.ingest_id = $ingest_id AND jobs.cluster = s.cluster
  AND jobs.job_id_raw = s.job_id_raw AND jobs.submit = s.submit
  AND (jobs.is_interactive IS DISTINCT FROM s.is_interactive
       OR jobs.interactive_evidence IS DISTINCT FROM s.interactive_evidence)
