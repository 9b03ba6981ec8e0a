-- After repaired step lines joined `parsed` in a bulk load (bulk.py): the interactive verdict
-- of the rows of ingest $ingest_id whose steps <steps> holds (those jobs', step_flags.sql),
-- again from all their steps (fold.sql gave it before those lines were read; macros.sql:
-- ing_interactive). Returns the count.
UPDATE jobs SET
    is_interactive = ing_interactive(ing_cmd(jobs.submit_line), jobs.submit_line,
                                     s.has_interactive, s.has_batch, jobs.job_name),
    interactive_evidence = ing_interactive_evidence(ing_cmd(jobs.submit_line),
                                                    s.has_interactive, s.has_batch, jobs.job_name)
FROM ({{steps}}) AS s
WHERE jobs.ingest_id = $ingest_id AND jobs.cluster = s.cluster AND jobs.job_id_raw = s.job_id_raw
