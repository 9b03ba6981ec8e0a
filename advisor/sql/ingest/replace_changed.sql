-- Replace stored allocations that this source changed (a later state, a fix), except that a
-- finished stored row is never replaced by an unfinished one (a stale snapshot loaded late).
-- Runs before insert_new. Parameter: $ingest_id. Returns the count.
INSERT OR REPLACE INTO jobs (
    cluster, job_id_raw, submit, job_id, array_job_id, array_task_id, het_job_id, het_job_offset,
    "user", uid, "group", account, "partition", qos, job_name, state, state_raw, exit_code,
    eligible, "start", "end", elapsed_s, timelimit_s, nnodes, cpus, gpus, gpu_type, gpu_type_raw,
    gpu_types, mem_mb, billing, node_list, req_cpus, req_gpus, req_mem_mb, alloc_tres, req_tres,
    submit_line, work_dir, is_interactive, interactive_evidence, exclusive, ingest_id, updated_at)
SELECT
    s.cluster,
    s.job_id_raw,
    s.submit,
    s.job_id,
    s.array_job_id,
    s.array_task_id,
    s.het_job_id,
    s.het_job_offset,
    s."user",
    s.uid,
    s."group",
    s.account,
    s."partition",
    s.qos,
    s.job_name,
    s.state,
    s.state_raw,
    s.exit_code,
    s.eligible,
    s."start",
    s."end",
    s.elapsed_s,
    s.timelimit_s,
    s.nnodes,
    s.cpus,
    s.gpus,
    s.gpu_type,
    s.gpu_type_raw,
    s.gpu_types,
    s.mem_mb,
    s.billing,
    s.node_list,
    s.req_cpus,
    s.req_gpus,
    s.req_mem_mb,
    s.alloc_tres,
    s.req_tres,
    s.submit_line,
    s.work_dir,
    s.is_interactive,
    s.interactive_evidence,
    s.exclusive, $ingest_id, timezone('UTC', now())
FROM stage s
JOIN jobs j ON j.cluster = s.cluster AND j.job_id_raw = s.job_id_raw AND j.submit = s.submit
WHERE NOT (
        (s.job_id, s.array_job_id, s.array_task_id, s.het_job_id, s.het_job_offset, s."user",
              s.uid, s."group", s.account, s."partition", s.qos, s.job_name, s.state, s.state_raw,
              s.exit_code, s.eligible, s."start", s."end", s.elapsed_s, s.timelimit_s, s.nnodes,
              s.cpus, s.gpus, s.gpu_type, s.gpu_type_raw, s.gpu_types, s.mem_mb, s.billing,
              s.node_list, s.req_cpus, s.req_gpus, s.req_mem_mb, s.alloc_tres, s.req_tres,
              s.submit_line, s.work_dir, s.is_interactive, s.interactive_evidence, s.exclusive)
             IS NOT DISTINCT FROM
             (j.job_id, j.array_job_id, j.array_task_id, j.het_job_id, j.het_job_offset, j."user",
              j.uid, j."group", j.account, j."partition", j.qos, j.job_name, j.state, j.state_raw,
              j.exit_code, j.eligible, j."start", j."end", j.elapsed_s, j.timelimit_s, j.nnodes,
              j.cpus, j.gpus, j.gpu_type, j.gpu_type_raw, j.gpu_types, j.mem_mb, j.billing,
              j.node_list, j.req_cpus, j.req_gpus, j.req_mem_mb, j.alloc_tres, j.req_tres,
              j.submit_line, j.work_dir, j.is_interactive, j.interactive_evidence, j.exclusive))
  AND NOT (j."end" IS NOT NULL AND s."end" IS NULL
           AND list_contains(['RUNNING', 'PENDING', 'SUSPENDED', 'REQUEUED', 'RESIZING', ''], coalesce(s.state, '')))
