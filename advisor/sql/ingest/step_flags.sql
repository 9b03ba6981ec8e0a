-- Per job of `parsed` (cluster, job_id_raw): whether it has an `.interactive` and a `.batch`
-- step, the step evidence of fold.sql's interactive verdict (macros.sql: ing_interactive).
    SELECT cluster, job_id_raw,
        bool_or(step = 'interactive') AS has_interactive,
        bool_or(step = 'batch') AS has_batch
    FROM parsed
    WHERE step IS NOT NULL AND job_id_raw IS NOT NULL
    GROUP BY ALL
