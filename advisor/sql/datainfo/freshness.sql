-- Per cluster: how many jobs, how recent the newest record is, and when it was last loaded.
SELECT j.cluster,
       count(*) AS jobs,
       count(*) FILTER (WHERE j.gpus > 0) AS gpu_jobs,
       min(j.submit) FILTER (WHERE j.submit > TIMESTAMP '1970-01-01') AS first_submit,
       max(j.submit) AS last_submit,
       max(j."end") AS last_end,
       (SELECT max(i.finished_at) FROM ingests i
         WHERE i.status = 'done' AND (i.cluster = j.cluster OR i.cluster IS NULL)) AS last_ingest
FROM jobs j
GROUP BY j.cluster
ORDER BY j.cluster;
