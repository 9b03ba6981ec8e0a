-- Fold steps into their allocation and keep one row per key. When one source holds a key
-- twice, a repaired line (a record glued back together) wins, then the later end, then start.
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
    SELECT p.* FROM parsed p
    WHERE p.step IS NULL AND p.bad_field IS NULL
      AND NOT EXISTS (SELECT 1 FROM dupkeys d WHERE d.cluster = p.cluster
                      AND d.job_id_raw = p.job_id_raw AND d.submit = p.submit)
    UNION ALL
    SELECT * FROM (
        SELECT p.* FROM parsed p SEMI JOIN dupkeys d
            ON d.cluster = p.cluster AND d.job_id_raw = p.job_id_raw AND d.submit = p.submit
        WHERE p.step IS NULL AND p.bad_field IS NULL
        QUALIFY row_number() OVER (PARTITION BY p.cluster, p.job_id_raw, p.submit
            ORDER BY p.repaired DESC, p."end" DESC NULLS LAST, p."start" DESC NULLS LAST,
                     p.state_raw DESC NULLS LAST) = 1)
), mp AS (
    SELECT map_from_entries(list({'key': raw, 'value': canon})) AS m FROM gmap
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
    coalesce(mp.m[x.gpu_type_raw], x.gpu_type_raw) AS gpu_type,
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
FROM x CROSS JOIN mp;
