-- ingest/pressure_fold: each job's CPU pressure from pressure_records, onto its jobs row: per
-- host the latest record of the job's own cgroup (step '') that read its pressure (an epilog
-- that found the cgroup already gone says "unavailable" after the agent's last reading; that
-- reading stands), the totals summed over hosts, and
-- the seconds they cover (the job's start to the record, at most its elapsed time). A record
-- matches a job by cluster ('' matches any) and raw id, and must fall within the job's run
-- (start to end + 1 hour), so a reused job id never takes another job's pressure. A job whose
-- hosts all said "unavailable" gets that status and no figures. A record that says more than
-- time allows is left out as impossible: stalled longer than its cgroup has existed (the job's
-- start to the record; PSI's some share is at most 1), or more CPU seconds than the job's CPUs
-- had in that time; 60 s and 5% of slack cover a cgroup made before Slurm's start stamp and a
-- clock that rounds. Only changed rows are written,
-- so the derived tables see a change only where there is one.
-- Parameter: $since, an ingest id: only the jobs whose rows a later ingest wrote, and those
-- whose raw id a record of a later ingest names, are folded again (every other job's figures
-- are what the records gave them before); NULL folds every job.
UPDATE jobs AS j
SET psi_some_s = p.some_s, psi_full_s = p.full_s, psi_covered_s = p.covered_s,
    psi_hosts = p.hosts, psi_status = p.status
FROM (
    WITH touched AS (
        SELECT DISTINCT TRY_CAST(job_id AS BIGINT) AS job_id_raw
        FROM pressure_records
        WHERE step = '' AND ingest_id > $since
    ), m AS (
        SELECT j.cluster, j.job_id_raw, j.submit, r.host, r.status, r.some_s, r.full_s,
               least(greatest(epoch(r.collected_at - j.start), 0),
                     coalesce(j.elapsed_s, epoch(r.collected_at - j.start))) AS covered_s,
               row_number() OVER (PARTITION BY j.cluster, j.job_id_raw, j.submit, r.host
                                  ORDER BY r.status = 'ok' DESC, r.collected_at DESC) AS k
        FROM pressure_records AS r
        JOIN jobs AS j
          ON (r.cluster = '' OR r.cluster = j.cluster)
         AND j.job_id_raw = TRY_CAST(r.job_id AS BIGINT)
         AND j.start IS NOT NULL
         AND r.collected_at >= j.start
         AND r.collected_at <= coalesce(j."end", r.collected_at) + INTERVAL 1 HOUR
        WHERE r.step = ''
          AND coalesce(r.some_s, 0) <= epoch(r.collected_at - j.start) * 1.05 + 60
          AND (j.cpus IS NULL
               OR coalesce(r.usage_s, 0) <= j.cpus * epoch(r.collected_at - j.start) * 1.05 + 60)
          AND ($since IS NULL OR j.ingest_id > $since
               OR j.job_id_raw IN (SELECT job_id_raw FROM touched))
    )
    SELECT cluster, job_id_raw, submit,
           CASE WHEN bool_or(status = 'ok') THEN 'measured' ELSE 'unavailable' END AS status,
           sum(some_s) FILTER (WHERE status = 'ok') AS some_s,
           sum(full_s) FILTER (WHERE status = 'ok') AS full_s,
           sum(covered_s) FILTER (WHERE status = 'ok') AS covered_s,
           CAST(count(*) FILTER (WHERE status = 'ok') AS INTEGER) AS hosts
    FROM m
    WHERE k = 1
    GROUP BY ALL
) AS p
WHERE j.cluster = p.cluster AND j.job_id_raw = p.job_id_raw AND j.submit = p.submit
  AND (j.psi_status IS DISTINCT FROM p.status
       OR j.psi_some_s IS DISTINCT FROM p.some_s
       OR j.psi_full_s IS DISTINCT FROM p.full_s
       OR j.psi_covered_s IS DISTINCT FROM p.covered_s
       OR j.psi_hosts IS DISTINCT FROM p.hosts)
