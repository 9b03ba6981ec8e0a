-- Compare each staged allocation with the stored one: insert (new key), same (nothing
-- changed), older (the stored row already finished and this one has not: keep the stored),
-- update (anything else: a later state, a fix).
CREATE OR REPLACE TEMP TABLE classified AS
SELECT s.*,
    CASE
        WHEN j.job_id_raw IS NULL THEN 'insert'
        WHEN (s.job_id, s.array_job_id, s.array_task_id, s.het_job_id, s.het_job_offset, s."user",
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
              j.submit_line, j.work_dir, j.is_interactive, j.interactive_evidence, j.exclusive)
            THEN 'same'
        WHEN j."end" IS NOT NULL AND s."end" IS NULL
             AND coalesce(s.state, '') IN ('RUNNING', 'PENDING', 'SUSPENDED', 'REQUEUED', 'RESIZING', '')
            THEN 'older'
        ELSE 'update'
    END AS action
FROM stage s
LEFT JOIN jobs j ON j.cluster = s.cluster AND j.job_id_raw = s.job_id_raw AND j.submit = s.submit;
