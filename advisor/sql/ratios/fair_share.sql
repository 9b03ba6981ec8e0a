-- ratios/fair_share: node types (cluster, GPU type, CPUs and GPUs per node) and the cores per
-- GPU a job could have had on them: usable CPUs (CPUEfctv when known, else CPUTot) / GPUs.
-- $cluster NULL = every cluster.
SELECT
    cluster,
    gpu_type,
    coalesce(cpus_effective, cpus) AS cpus_per_node,
    gpus AS gpus_per_node,
    count(*) AS nodes,
    coalesce(cpus_effective, cpus)::DOUBLE / gpus AS cores_per_gpu,
    list_sort(list_distinct(flatten(list(coalesce(partitions, []))))) AS partitions
FROM nodes
WHERE gpus > 0 AND coalesce(cpus_effective, cpus) > 0
  AND ($cluster::VARCHAR IS NULL OR cluster = $cluster::VARCHAR)
GROUP BY cluster, gpu_type, coalesce(cpus_effective, cpus), gpus
ORDER BY cluster, gpu_type, cpus_per_node, gpus_per_node
