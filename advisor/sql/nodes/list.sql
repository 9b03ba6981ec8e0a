-- nodes/list: the node inventory, with each GPU node's cores per GPU (usable CPUs / GPUs).
-- $cluster NULL = every cluster.
SELECT
    cluster, node_name, cpus, cpus_effective, sockets, cores_per_socket, threads_per_core,
    real_memory_mb, gpus, gpu_type, gpu_type_raw, partitions, state,
    CASE WHEN gpus > 0 THEN coalesce(cpus_effective, cpus)::DOUBLE / gpus END AS cores_per_gpu,
    snapshot_at
FROM nodes
WHERE $cluster::VARCHAR IS NULL OR cluster = $cluster::VARCHAR
ORDER BY cluster, node_name
