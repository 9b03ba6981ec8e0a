-- Clusters whose accounting seems not to record gres/gpu (AccountingStorageTRES without it):
-- jobs with AllocTRES, none with a gres/gpu key, and some asking for GPUs in their request
-- or submit line (ingest/gpus_unrecorded.sql says the same per load). GPU jobs of such a
-- cluster are stored with 0 GPUs. The asking jobs are counted only in the clusters without
-- a GPU key, which on a GPU site are none.
WITH no_gpu_key AS (
    SELECT cluster FROM jobs
    GROUP BY cluster
    HAVING bool_or(alloc_tres IS NOT NULL)
       AND NOT bool_or(coalesce(contains(alloc_tres, 'gres/gpu'), FALSE))
)
SELECT j.cluster, count(*) AS asking_jobs
FROM jobs j JOIN no_gpu_key USING (cluster)
WHERE j.req_gpus > 0 OR regexp_matches(coalesce(j.submit_line, ''),
      '(--gres[= ]\S*gpu|--gpus|--gpus-per-\w+|--gpu[s]?-per-\w+|\s-G\s?\d)')
GROUP BY j.cluster
ORDER BY j.cluster
