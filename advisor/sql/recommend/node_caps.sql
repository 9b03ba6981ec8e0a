-- recommend/node_caps: the node inventory by GPU family (lower case) and partition list: the
-- most cores per GPU that every node of the group can give (usable CPUs / GPUs, rounded down)
-- and its nodes. No parameters: binding a value makes DuckDB import pandas, which the
-- job-submit path cannot wait for; the caller picks its rows (there are few).
SELECT
    lower(gpu_type) AS gpu_type,
    partitions,
    min(floor(coalesce(cpus_effective, cpus)::DOUBLE / gpus))::INTEGER AS cap_cpus_per_gpu,
    count(*) AS nodes
FROM nodes
WHERE gpus > 0
  AND coalesce(cpus_effective, cpus) > 0
  AND gpu_type IS NOT NULL
GROUP BY ALL
