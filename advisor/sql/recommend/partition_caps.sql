-- recommend/partition_caps: per (partition, GPU family), the most cores per GPU that every node
-- can give (usable CPUs / GPUs, rounded down). Nodes listed in several partitions count in each.
WITH per_node AS (
    SELECT unnest(partitions) AS "partition", gpu_type,
           floor(coalesce(cpus_effective, cpus)::DOUBLE / gpus) AS cpg
    FROM nodes
    WHERE gpus > 0 AND coalesce(cpus_effective, cpus) > 0 AND gpu_type IS NOT NULL
)
SELECT "partition", gpu_type, min(cpg)::INTEGER AS cap_cpus_per_gpu, count(*) AS nodes
FROM per_node
GROUP BY ALL
