-- ratios/cube_fine: the finest grouping of jobs the ratio cubes are built from, as a TEMP table
-- of this connection (dropped after the rebuild): one row per distinct (cluster, GPU type,
-- partition, account, user, month, state, interactive, GPUs, CPUs, exclusion reason) with its
-- job count and GPU-seconds. Same rules as ratios/jobs_facts; month = first day of the month of
-- the start time (submit time for jobs never started). An excluded job keeps no CPU count (its
-- ratio is never taken), so excluded jobs fold into few rows.
CREATE OR REPLACE TEMP TABLE _ratio_fine AS
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
    count(*) AS n,
    coalesce(sum(j.gpus::BIGINT * greatest(coalesce(j.elapsed_s, 0), 0)), 0) AS w
FROM jobs AS j
GROUP BY ALL
