-- usage/starved_mix_months: usage/starved_mix.sql's rows from usage_starved_months, for
-- month-aligned bounds and the default thresholds the table was built with. Parameters:
-- $start, $end, $partitions, $clusters, $gpu_types.
SELECT cluster, "partition", gpu_type, cpus, gpus,
       sum(jobs) AS jobs,
       sum(gpu_hours) AS gpu_hours,
       sum(elapsed_s) AS elapsed_s
FROM usage_starved_months
WHERE ($start::TIMESTAMP IS NULL OR month >= $start::TIMESTAMP)
  AND ($end::TIMESTAMP IS NULL OR month < $end::TIMESTAMP)
  AND (len($partitions::VARCHAR[]) = 0 OR list_contains($partitions::VARCHAR[], "partition"))
  AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
  AND (len($gpu_types::VARCHAR[]) = 0 OR list_contains($gpu_types::VARCHAR[], gpu_type))
GROUP BY ALL
ORDER BY ALL
