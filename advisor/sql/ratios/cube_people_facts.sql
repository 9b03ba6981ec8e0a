-- ratios/cube_people_facts: the columns of ratios/jobs_facts, read from ratio_cube_people
-- (all time) and ratio_people (the names behind each pid). Only for queries without month or
-- interactive keys, state filters or time bounds (advisor.ratios decides; those parameters are
-- then NULL or empty; ratios/cube_people_months_facts answers the others).
-- The cube rows are first summed per (pid, ratio) on integers, then named (grouping every
-- cube row by five strings was most of an account/user summary's time). Placeholder {{gpu_count}}: `gpus` when
-- the query groups by gpu_count, else `NULL::INTEGER` (fixed text chosen in advisor.ratios).
WITH people AS (
    SELECT pid, cluster, gpu_type, "partition", account, "user"
    FROM ratio_people
    WHERE (len($partitions::VARCHAR[]) = 0 OR list_contains($partitions::VARCHAR[], "partition"))
      AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
      AND (len($gpu_types::VARCHAR[]) = 0 OR list_contains($gpu_types::VARCHAR[], gpu_type))
      AND (len($accounts::VARCHAR[]) = 0 OR list_contains($accounts::VARCHAR[], account))
      AND (len($users::VARCHAR[]) = 0 OR list_contains($users::VARCHAR[], "user"))
),
per_pid AS (
    SELECT pid, {{gpu_count}} AS gpu_count, cpus::DOUBLE / gpus AS v, excluded_reason,
           sum(n) AS n, sum(w) AS w
    FROM ratio_cube_people
    WHERE ($min_gpus::INTEGER IS NULL OR gpus >= $min_gpus::INTEGER)
      -- no months or states here: such queries never come here (and would select nothing)
      AND $start::TIMESTAMP IS NULL AND $end::TIMESTAMP IS NULL
      AND len($states::VARCHAR[]) = 0
      AND {{pids}}  -- TRUE, or only the pids of chosen groups (advisor.ratios.below_target)
    GROUP BY ALL
)
SELECT
    TRUE AS _all,
    p.cluster,
    p.gpu_type,
    p."partition",
    p.account,
    p."user",
    NULL::VARCHAR AS month,
    c.gpu_count,
    NULL::VARCHAR AS interactive,
    c.v,
    c.n,
    c.w,
    c.excluded_reason
FROM per_pid AS c
JOIN people AS p USING (pid)
