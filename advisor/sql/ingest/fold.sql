-- Fold steps into their allocation: the rows written to `jobs` (the one definition of a row).
-- <lines>: a relation of parsed lines whose allocation lines that parsed are kept, one per key
-- (`parsed`, or a sub-query over it that leaves out the lines losing their key, or the parser
-- over the file for a bulk load); <steps>: step_flags.sql. Interactive or not: macros.sql
-- (ing_interactive).
WITH steps AS (
{{steps}}
), alloc AS (
    SELECT * FROM {{lines}} AS l WHERE step IS NULL AND bad_field IS NULL
), x AS (
    SELECT alloc.*, steps.* EXCLUDE (cluster, job_id_raw),
        ing_cmd(submit_line) AS cmd
    FROM alloc LEFT JOIN steps USING (cluster, job_id_raw)
)
SELECT
    x.cluster, x.job_id_raw, x.submit, x.job_id, x.array_job_id, x.array_task_id, x.het_job_id,
    x.het_job_offset, x."user", x.uid, x."group", x.account, x."partition", x.qos, x.job_name,
    x.state, x.state_raw, x.exit_code, x.eligible, x."start", x."end", x.elapsed_s,
    x.timelimit_s, x.nnodes, x.cpus, x.gpus,
    coalesce(g.canon, x.gpu_type_raw) AS gpu_type,
    x.gpu_type_raw,
    CASE WHEN x.typed_list IS NOT NULL THEN array_to_string(list_transform(x.typed_list,
        t -> coalesce(mp.m[t.name], t.name) || ':' || t.n), ',') END AS gpu_types,
    x.mem_mb, x.billing, x.node_list, x.req_cpus, x.req_gpus, x.req_mem_mb, x.alloc_tres,
    x.req_tres, x.submit_line, x.work_dir,
    ing_interactive(x.cmd, x.submit_line, x.has_interactive, x.has_batch, x.job_name)
        AS is_interactive,
    ing_interactive_evidence(x.cmd, x.has_interactive, x.has_batch, x.job_name)
        AS interactive_evidence,
    x.exclusive,
    -- usage (issue 23): the allocation line's, else its steps'. sacct's job line sums its
    -- steps' TotalCPU, so the larger of the two never counts a step twice. The mean GPU
    -- utilisation: jobstats' own per-GPU mean, else TRESUsageInTot's gpuutil (a sum over
    -- tasks) per GPU, never above the peak; no mean where no total is known (least() would
    -- pass the peak off as one).
    greatest(x.cpu_used_s, x.steps_cpu_used_s) AS cpu_used_s,
    x.cpu_time_alloc_s,
    greatest(x.mem_used_max_mb, x.steps_mem_used_max_mb) AS mem_used_max_mb,
    coalesce(x.js_util_mean_pct, x.steps_js_util_mean_pct,
             CASE WHEN coalesce(x.gpu_util_tot_pct, x.steps_gpu_util_tot_pct) IS NOT NULL
                  THEN least(greatest(x.gpu_util_tot_pct, x.steps_gpu_util_tot_pct) / nullif(x.gpus, 0),
                             greatest(x.gpu_util_max_pct, x.steps_gpu_util_max_pct)) END) AS gpu_util_mean_pct,
    greatest(x.gpu_util_max_pct, x.steps_gpu_util_max_pct) AS gpu_util_max_pct,
    greatest(x.gpu_mem_max_mb, x.steps_gpu_mem_max_mb) AS gpu_mem_max_mb,
    coalesce(x.usage_source, x.steps_usage_source) AS usage_source
FROM x
LEFT JOIN gmap g ON g.raw = x.gpu_type_raw
-- the name map, joined only onto the rare rows with several GPU types
LEFT JOIN (SELECT map_from_entries(list({'key': raw, 'value': canon})) AS m FROM gmap) mp
    ON x.typed_list IS NOT NULL
