-- Per job of the view step_rows (cluster, job_id_raw): whether it has an `.interactive` and a `.batch`
-- step, the step evidence of fold.sql's interactive verdict (macros.sql: ing_interactive).
-- <of_lines>: TRUE, or steps_of_lines.sql (only the jobs of a few lines: the update that
-- follows then skips the millions of jobs whose steps did not change).
    SELECT cluster, job_id_raw,
        bool_or(step = 'interactive') AS has_interactive,
        bool_or(step = 'batch') AS has_batch,
        -- usage of the steps, for an allocation line that carries none (fold.sql)
        sum(cpu_used_s) AS steps_cpu_used_s,
        max(mem_used_max_mb) AS steps_mem_used_max_mb,
        max(gpu_util_tot_pct) AS steps_gpu_util_tot_pct,
        max(gpu_util_max_pct) AS steps_gpu_util_max_pct,
        max(gpu_mem_max_mb) AS steps_gpu_mem_max_mb,
        max(js_util_mean_pct) AS steps_js_util_mean_pct,
        min(usage_source) AS steps_usage_source
    FROM step_rows AS p
    WHERE step IS NOT NULL AND job_id_raw IS NOT NULL AND {{of_lines}}
    GROUP BY ALL
