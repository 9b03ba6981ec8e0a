-- Per cluster: how many jobs, how recent the newest record is, and when it was last loaded.
-- last_ingest: the newest finished load that named the cluster (--cluster), or that wrote jobs
-- of it (a file that names its cluster is recorded under --cluster's "default").
WITH wrote AS (
    SELECT w.cluster, max(i.finished_at) AS finished_at
    FROM (SELECT DISTINCT cluster, ingest_id FROM jobs) AS w
    JOIN ingests i ON i.ingest_id = w.ingest_id AND i.status = 'done'
    GROUP BY w.cluster
)
SELECT j.cluster,
       count(*) AS jobs,
       count(*) FILTER (WHERE j.gpus > 0) AS gpu_jobs,
       min(j.submit) FILTER (WHERE j.submit > TIMESTAMP '1970-01-01') AS first_submit,
       max(j.submit) AS last_submit,
       max(j."end") AS last_end,
       greatest(
           (SELECT max(i.finished_at) FROM ingests i
             WHERE i.status = 'done' AND (i.cluster = j.cluster OR i.cluster IS NULL)),
           (SELECT w.finished_at FROM wrote w WHERE w.cluster = j.cluster)) AS last_ingest
FROM jobs j
GROUP BY j.cluster
ORDER BY j.cluster;
