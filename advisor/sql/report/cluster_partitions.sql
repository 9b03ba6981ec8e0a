-- Which cluster each (partition, GPU family) of the month's GPU jobs ran in: each cluster has
-- its own slurm.conf, so the report's settings are one block per cluster. The eligibility of
-- report/job_mix. $start, $end: the month [start, end) in UTC; $cluster: NULL = every cluster.
SELECT DISTINCT
    cluster,
    "partition",
    coalesce(gpu_type, '(untyped)') AS gpu_type
FROM jobs
WHERE gpus > 0 AND cpus > 0 AND elapsed_s > 0 AND start IS NOT NULL
  AND start >= $start::TIMESTAMP AND start < $end::TIMESTAMP
  AND ($cluster::VARCHAR IS NULL OR cluster = $cluster::VARCHAR)
ORDER BY 1, 2 NULLS LAST, 3
