-- ratios/cube_jobs: every job of {{source}} (jobs, or the changed slices' _slice_jobs) with the
-- columns the cubes group by (spliced in as {{jobs}} by the cube builds). Same rules as
-- ratios/jobs_facts; month = first day of the month of the start time (submit time for jobs never
-- started). An excluded job keeps no CPU count (its ratio is never taken), so excluded jobs fold
-- into few rows.
SELECT
    j.cluster,
    coalesce(j.gpu_type, '(untyped)') AS gpu_type,
    j."partition",
    j.account,
    j."user",
    CAST(date_trunc('month', coalesce(j.start, j.submit)) AS DATE) AS month,
    j.state,
    CASE j.is_interactive
        WHEN TRUE THEN 'interactive' WHEN FALSE THEN 'batch' ELSE 'unknown'
    END AS interactive,
    j.gpus,
    CASE WHEN j.start IS NOT NULL AND j.gpus > 0 AND j.cpus > 0 THEN j.cpus END AS cpus,
    CASE
        WHEN j.start IS NULL THEN 'never_started'
        WHEN coalesce(j.gpus, 0) <= 0 THEN 'no_gpus'
        WHEN coalesce(j.cpus, 0) <= 0 THEN 'no_cpus'
    END AS excluded_reason,
    j.gpus::BIGINT * greatest(coalesce(j.elapsed_s, 0), 0) AS gpu_seconds
FROM {{source}} AS j
