-- recommend/node_cap: the most cores per GPU that every node of a GPU type can give (usable
-- CPUs / GPUs, rounded down), optionally only nodes of one partition.
-- $gpu_type: canonical family (case-insensitive); $partition: NULL = every partition.
SELECT
    min(floor(coalesce(cpus_effective, cpus)::DOUBLE / gpus))::INTEGER AS cap_cpus_per_gpu,
    count(*) AS nodes
FROM nodes
WHERE gpus > 0
  AND coalesce(cpus_effective, cpus) > 0
  AND lower(gpu_type) = lower($gpu_type::VARCHAR)
  AND ($partition::VARCHAR IS NULL OR list_contains(partitions, $partition::VARCHAR))
