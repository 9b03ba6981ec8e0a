-- Per cluster: how many jobs, how recent the newest record is, and when it was last loaded.
-- A load counts for a cluster when it names that cluster or loaded any of its jobs (a load
-- recorded under another name, e.g. "default", still counts for the clusters in its file).
WITH per AS (
  SELECT j.cluster,
         count(*) AS jobs,
         count(*) FILTER (WHERE j.gpus > 0) AS gpu_jobs,
         min(j.submit) FILTER (WHERE j.submit > TIMESTAMP '1970-01-01') AS first_submit,
         max(j.submit) AS last_submit,
         max(j."end") AS last_end,
         list(DISTINCT j.ingest_id) AS ingest_ids
  FROM jobs j
  GROUP BY j.cluster
)
SELECT per.cluster, per.jobs, per.gpu_jobs, per.first_submit, per.last_submit, per.last_end,
       (SELECT max(i.finished_at) FROM ingests i
         WHERE i.status = 'done'
           AND (i.cluster = per.cluster OR list_contains(per.ingest_ids, i.ingest_id)))
           AS last_ingest
FROM per
ORDER BY per.cluster;
