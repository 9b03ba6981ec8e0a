-- ratios/jobs_facts: every job that passes a ratio query's filters (one row each, jobs = 1),
-- with its group keys, its CPU-per-GPU ratio (cores_per_gpu), its GPU-seconds, the fair share of
-- its node type (from ratio_fair_share; NULL when the inventory has none) and, when it cannot
-- count, the reason (excluded_reason). ratios/cube_facts gives the same columns from the
-- pre-aggregated ratio_cube.
-- A job counts when it got an allocation: a start time, GPUs > 0, CPUs > 0; the first of
-- these that fails is its excluded_reason. A job with no elapsed time (started and ended in
-- the same second) counts, with zero GPU-seconds.
-- Time filters and the month key use the start time (the submit time for jobs never started).
-- {{where}}: filters/jobs_where on that time. Parameters (NULL or an empty list = no filter):
-- $start, $end (TIMESTAMP, UTC, [start, end)), $states, $partitions, $clusters, $gpu_types,
-- $accounts, $users (VARCHAR[]), $min_gpus.
SELECT
    TRUE AS _all,  -- the one key of a report with no grouping
    j.cluster AS cluster,
    coalesce(j.gpu_type, '(untyped)') AS gpu_type,
    j."partition" AS "partition",
    j.account AS account,
    j."user" AS "user",
    strftime(coalesce(j.start, j.submit), '%Y-%m') AS month,
    j.gpus AS gpu_count,
    CASE j.is_interactive
        WHEN TRUE THEN 'interactive' WHEN FALSE THEN 'batch' ELSE 'unknown'
    END AS interactive,
    j.cpus::DOUBLE / j.gpus AS cores_per_gpu,
    1 AS jobs,
    j.gpus::BIGINT * greatest(coalesce(j.elapsed_s, 0), 0) AS gpu_seconds,
    CASE
        WHEN j.start IS NULL THEN 'never_started'
        WHEN coalesce(j.gpus, 0) <= 0 THEN 'no_gpus'
        WHEN coalesce(j.cpus, 0) <= 0 THEN 'no_cpus'
    END AS excluded_reason,
    fair.fair_share_cores_per_gpu
FROM jobs AS j
LEFT JOIN ratio_fair_share AS fair
  ON fair.cluster = j.cluster AND fair.gpu_type = coalesce(j.gpu_type, '(untyped)')
WHERE {{where}}
