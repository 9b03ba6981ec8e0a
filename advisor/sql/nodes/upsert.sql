-- nodes/upsert: one node of a snapshot; a node already known is replaced by its newer state.
INSERT INTO nodes (
    cluster, node_name, cpus, cpus_effective, sockets, cores_per_socket, threads_per_core,
    real_memory_mb, gpus, gpu_type, gpu_type_raw, gres, partitions, features, state,
    snapshot_at, ingest_id
)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (cluster, node_name) DO UPDATE SET
    cpus = excluded.cpus,
    cpus_effective = excluded.cpus_effective,
    sockets = excluded.sockets,
    cores_per_socket = excluded.cores_per_socket,
    threads_per_core = excluded.threads_per_core,
    real_memory_mb = excluded.real_memory_mb,
    gpus = excluded.gpus,
    gpu_type = excluded.gpu_type,
    gpu_type_raw = excluded.gpu_type_raw,
    gres = excluded.gres,
    partitions = excluded.partitions,
    features = excluded.features,
    state = excluded.state,
    snapshot_at = excluded.snapshot_at,
    ingest_id = excluded.ingest_id
