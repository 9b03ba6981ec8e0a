-- ratios/below_target_people: rank account/user groups by GPU-seconds below a target ratio,
-- from the people cubes' integer counts (no percentiles): what advisor.ratios.below_target
-- reads first, so that percentiles are computed only for the top groups.
-- Placeholders (fixed text chosen in advisor.ratios, never user input): keys (the quoted group
-- keys, a subset of cluster, gpu_type, partition, account, user), match (the same keys compared
-- between t and p), cube (ratio_cube_people, or ratio_cube_people_months for state filters and
-- month bounds) and over_time (the month/state conditions on that cube).
-- Parameters: the filters of ratios/jobs_facts, $target_partitions/$target_gpu_types/
-- $target_values (one target per partition and GPU type) or $fixed (one target for all), $top.
-- A job is below its target when cpus / gpus < target, the same expression as the facts.
-- Rows: the top groups (w_below > 0, most first, ties by keys) with the pids they sum, then one
-- row (gid NULL) with the number of groups that have counted jobs and the exclusions by reason.
WITH targets AS (
    SELECT unnest($target_partitions::VARCHAR[]) AS _tp,
           unnest($target_gpu_types::VARCHAR[]) AS _tg,
           unnest($target_values::DOUBLE[]) AS _tv
),
people AS MATERIALIZED (
    SELECT p.pid, TRUE AS _all, p.cluster, p.gpu_type, p."partition", p.account, p."user",
           coalesce($fixed::DOUBLE, t._tv) AS target
    FROM ratio_people AS p
    LEFT JOIN targets AS t
      ON t._tp IS NOT DISTINCT FROM p."partition" AND t._tg IS NOT DISTINCT FROM p.gpu_type
    WHERE (len($partitions::VARCHAR[]) = 0 OR list_contains($partitions::VARCHAR[], p."partition"))
      AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], p.cluster))
      AND (len($gpu_types::VARCHAR[]) = 0 OR list_contains($gpu_types::VARCHAR[], p.gpu_type))
      AND (len($accounts::VARCHAR[]) = 0 OR list_contains($accounts::VARCHAR[], p.account))
      AND (len($users::VARCHAR[]) = 0 OR list_contains($users::VARCHAR[], p."user"))
),
rows AS (
    SELECT c.pid, c.excluded_reason, c.n, c.w, c.cpus::DOUBLE / c.gpus < p.target AS below
    FROM {{cube}} AS c
    JOIN people AS p USING (pid)
    WHERE ($min_gpus::INTEGER IS NULL OR c.gpus >= $min_gpus::INTEGER)
      AND {{over_time}}
),
per_pid AS (
    -- counted jobs, on one integer key
    SELECT pid, sum(n) AS n, sum(w) AS w,
           coalesce(sum(n) FILTER (WHERE below), 0) AS n_below,
           coalesce(sum(w) FILTER (WHERE below), 0) AS w_below
    FROM rows
    WHERE excluded_reason IS NULL
    GROUP BY pid
),
grouped AS MATERIALIZED (
    SELECT {{keys}}, p.target, sum(c.n) AS jobs, sum(c.w) AS gpu_s, sum(c.n_below) AS n_below,
           sum(c.w_below) AS w_below
    FROM per_pid AS c
    JOIN people AS p USING (pid)
    GROUP BY ALL
),
top AS (
    SELECT {{keys}}, target, jobs::BIGINT AS jobs, gpu_s::DOUBLE AS gpu_s,
           n_below::BIGINT AS n_below, w_below::DOUBLE AS w_below
    FROM grouped
    WHERE w_below > 0
    ORDER BY w_below DESC, {{keys}}
    LIMIT $top
)
SELECT row_number() OVER (ORDER BY w_below DESC, {{keys}}) AS gid, *
FROM (
    SELECT t.*, list(p.pid ORDER BY p.pid) AS pids  -- the people each top group sums
    FROM top AS t
    JOIN people AS p ON {{match}}
    GROUP BY ALL
)
UNION ALL BY NAME
SELECT (SELECT count(*) FROM grouped) AS groups,
       (SELECT coalesce(list({'reason': reason, 'jobs': jobs::BIGINT} ORDER BY reason), [])
        FROM (SELECT excluded_reason AS reason, sum(n) AS jobs FROM rows
              WHERE excluded_reason IS NOT NULL GROUP BY 1)) AS excluded
