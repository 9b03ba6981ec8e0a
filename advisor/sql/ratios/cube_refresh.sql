-- ratios/cube_refresh: rebuild ratio_cube from jobs (run inside a transaction after
-- DELETE FROM ratio_cube). Same rules as ratios/jobs_facts; month = first day of the month of
-- the start time (submit time for jobs never started).
INSERT INTO ratio_cube
SELECT
    j.cluster,
    coalesce(j.gpu_type, '(untyped)'),
    j."partition",
    CAST(date_trunc('month', coalesce(j.start, j.submit)) AS DATE),
    j.state,
    j.gpus,
    j.cpus,
    CASE j.is_interactive
        WHEN TRUE THEN 'interactive' WHEN FALSE THEN 'batch' ELSE 'unknown'
    END,
    CASE
        WHEN j.start IS NULL THEN 'never_started'
        WHEN coalesce(j.gpus, 0) <= 0 THEN 'no_gpus'
        WHEN coalesce(j.cpus, 0) <= 0 THEN 'no_cpus'
    END AS excluded_reason,
    count(*),
    coalesce(sum(j.gpus::BIGINT * greatest(coalesce(j.elapsed_s, 0), 0)), 0)
FROM jobs AS j
GROUP BY ALL
