-- Fold steps into their allocation, one row per key (the alloc placeholder: alloc_plain.sql, or
-- alloc_dedupe.sql when the source holds a key twice).
-- Interactive evidence, strongest first: SubmitLine (salloc, srun --pty -> yes; sbatch, srun
-- -> no), an `.interactive` step (yes) or a `.batch` step (no), a shell-like job name (yes).
CREATE OR REPLACE TEMP VIEW stage AS
WITH steps AS (
    SELECT cluster, job_id_raw,
        bool_or(step = 'interactive') AS has_interactive,
        bool_or(step = 'batch') AS has_batch
    FROM parsed
    WHERE step IS NOT NULL AND job_id_raw IS NOT NULL
    GROUP BY ALL
), alloc AS (
{{alloc}}
), x AS (
    SELECT alloc.*, steps.has_interactive, steps.has_batch,
        lower(split_part(split_part(ltrim(coalesce(submit_line, '')), ' ', 1), '/', -1)) AS cmd
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
    CASE WHEN x.cmd = 'salloc' THEN TRUE
         WHEN x.cmd = 'srun' AND contains(x.submit_line, '--pty') THEN TRUE
         WHEN x.cmd IN ('sbatch', 'srun') THEN FALSE
         WHEN x.has_interactive THEN TRUE
         WHEN x.has_batch THEN FALSE
         WHEN list_contains(['interactive', 'bash', 'sh', 'zsh', 'tcsh', 'csh', 'fish', 'salloc',
                                        'srun', 'login'], lower(trim(x.job_name))) THEN TRUE
    END AS is_interactive,
    CASE WHEN x.cmd IN ('salloc', 'srun', 'sbatch') THEN 'submit_line'
         WHEN x.has_interactive OR x.has_batch THEN 'step'
         WHEN list_contains(['interactive', 'bash', 'sh', 'zsh', 'tcsh', 'csh', 'fish', 'salloc',
                                        'srun', 'login'], lower(trim(x.job_name))) THEN 'job_name'
    END AS interactive_evidence,
    x.exclusive
FROM x
LEFT JOIN gmap g ON g.raw = x.gpu_type_raw
-- the name map, joined only onto the rare rows with several GPU types
LEFT JOIN (SELECT map_from_entries(list({'key': raw, 'value': canon})) AS m FROM gmap) mp
    ON x.typed_list IS NOT NULL;
