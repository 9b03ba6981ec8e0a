-- ratios/cube_facts: the columns of ratios/jobs_facts, read from the pre-aggregated
-- ratio_cube (one row per distinct combination with its jobs and GPU-seconds). Only for queries
-- without user/account keys or filters, and with month-aligned time bounds (advisor.ratios
-- decides); $start/$end are then the first instants of months.
SELECT
    TRUE AS _all,
    cluster,
    gpu_type,
    "partition",
    NULL::VARCHAR AS account,
    NULL::VARCHAR AS "user",
    strftime(month, '%Y-%m') AS month,
    gpus AS gpu_count,
    interactive,
    cpus::DOUBLE / gpus AS cores_per_gpu,
    jobs,
    gpu_seconds,
    excluded_reason,
    fair.fair_share_cores_per_gpu
FROM ratio_cube
LEFT JOIN ratio_fair_share AS fair USING (cluster, gpu_type)
WHERE ($start::TIMESTAMP IS NULL OR month >= $start::TIMESTAMP)
  AND ($end::TIMESTAMP IS NULL OR month < $end::TIMESTAMP)
  AND (len($states::VARCHAR[]) = 0 OR list_contains($states::VARCHAR[], state))
  AND (len($partitions::VARCHAR[]) = 0 OR list_contains($partitions::VARCHAR[], "partition"))
  AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
  AND (len($gpu_types::VARCHAR[]) = 0 OR list_contains($gpu_types::VARCHAR[], gpu_type))
  AND ($min_gpus::INTEGER IS NULL OR gpus >= $min_gpus::INTEGER)
  -- the cube has no accounts or users: such filters never come here (and would select nothing)
  AND len($accounts::VARCHAR[]) = 0 AND len($users::VARCHAR[]) = 0
