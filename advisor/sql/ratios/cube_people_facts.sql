-- ratios/cube_people_facts: the columns of ratios/jobs_facts, read from a people cube and
-- ratio_people (the names behind each pid). The cube placeholder is ratio_cube_people (all
-- time: queries without month or interactive keys, state filters or time bounds) or
-- ratio_cube_people_months (per month, state and interactive: time bounds on the first
-- instant of a month; stored in month order, so a time range reads only its months); the
-- over_time placeholder is the month/state conditions for it (advisor.ratios decides both, and
-- the same two serve ratios/below_target_people).
-- Rows are first summed per (pid, ratio, and the month/GPUs/interactive keys the query groups
-- by) on integers, then named (grouping every cube row by five strings was most of an
-- account/user summary's time). Placeholders month, gpu_count, interactive: the column when
-- the query groups by it, else a typed NULL; pids: TRUE, or only the pids of chosen groups
-- (advisor.ratios.below_target). All fixed text chosen in advisor.ratios.
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
    SELECT pid, {{month}} AS month, {{gpu_count}} AS gpu_count, {{interactive}} AS interactive,
           cpus::DOUBLE / gpus AS v, excluded_reason, sum(n) AS n, sum(w) AS w
    FROM {{cube}} AS c
    WHERE {{over_time}}
      AND ($min_gpus::INTEGER IS NULL OR gpus >= $min_gpus::INTEGER)
      AND {{pids}}
    GROUP BY ALL
)
SELECT
    TRUE AS _all,
    p.cluster,
    p.gpu_type,
    p."partition",
    p.account,
    p."user",
    strftime(c.month, '%Y-%m') AS month,
    c.gpu_count,
    c.interactive,
    c.v,
    c.n,
    c.w,
    c.excluded_reason
FROM per_pid AS c
JOIN people AS p USING (pid)
