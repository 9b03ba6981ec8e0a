-- Insert the allocations of `classified` whose key is new. Parameter: $ingest_id.
INSERT INTO jobs (
    cluster, job_id_raw, submit, job_id, array_job_id, array_task_id, het_job_id, het_job_offset,
    "user", uid, "group", account, "partition", qos, job_name, state, state_raw, exit_code,
    eligible, "start", "end", elapsed_s, timelimit_s, nnodes, cpus, gpus, gpu_type, gpu_type_raw,
    gpu_types, mem_mb, billing, node_list, req_cpus, req_gpus, req_mem_mb, alloc_tres, req_tres,
    submit_line, work_dir, is_interactive, interactive_evidence, exclusive, ingest_id, updated_at)
SELECT
    cluster, job_id_raw, submit, job_id, array_job_id, array_task_id, het_job_id, het_job_offset,
    "user", uid, "group", account, "partition", qos, job_name, state, state_raw, exit_code,
    eligible, "start", "end", elapsed_s, timelimit_s, nnodes, cpus, gpus, gpu_type, gpu_type_raw,
    gpu_types, mem_mb, billing, node_list, req_cpus, req_gpus, req_mem_mb, alloc_tres, req_tres,
    submit_line, work_dir, is_interactive, interactive_evidence, exclusive, $ingest_id,
    timezone('UTC', now())
FROM classified
WHERE action = 'insert';
