-- A requeued job exported again without `sacct -D` comes back under a later submit time: the
-- row of its earlier run, stored as unfinished (no end, a running state), would stay RUNNING
-- for ever. Such a row is superseded when another row of the same cluster and job_id_raw has a
-- later submit: "newer" is the later submit, the one time Slurm renews on a requeue (a reused
-- job id is newer the same way, and a job id is never live twice). The row is kept (its
-- allocation was real) and marked REQUEUED, as `sacct -D` shows such runs, its raw state
-- saying why. Rows of other loads are checked too (an old snapshot loaded late).
-- Parameter: $ingest_id. Returns the count.
UPDATE jobs SET state = 'REQUEUED',
    state_raw = coalesce(jobs.state_raw, jobs.state) || ' (superseded by a later record of this job id)',
    ingest_id = $ingest_id, updated_at = timezone('UTC', now())
FROM (
    SELECT st.cluster, st.job_id_raw, st.submit
    FROM jobs st
    WHERE st."end" IS NULL
      AND list_contains(['RUNNING', 'PENDING', 'SUSPENDED', 'REQUEUED', 'RESIZING'], st.state)
      AND NOT ends_with(coalesce(st.state_raw, ''), '(superseded by a later record of this job id)')
      AND EXISTS (SELECT 1 FROM jobs n
                  WHERE n.cluster = st.cluster AND n.job_id_raw = st.job_id_raw
                    AND n.submit > st.submit
                    AND (n.ingest_id = $ingest_id OR st.ingest_id = $ingest_id))
) AS s
WHERE jobs.cluster = s.cluster AND jobs.job_id_raw = s.job_id_raw AND jobs.submit = s.submit
