-- ratios/below_target_people: rank account/user groups by GPU-seconds below a target ratio,
-- from the people cubes' integer counts (no percentiles): what advisor.ratios.below_target
-- reads first, so that percentiles are computed only for the top groups.
-- Placeholders (fixed text chosen in advisor.ratios, never user input): keys (the quoted group
-- keys, a subset of cluster, gpu_type, partition, account, user); cluster, gpu_type, partition,
-- account, user (the column p.<name> when among the keys, else a typed NULL); cube
-- (ratio_cube_people, or ratio_cube_people_months for state filters and month bounds) and
-- over_time (the month/state conditions on that cube).
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
groups AS MATERIALIZED (
    -- one row per output group (its key values and target) with its pids
    SELECT row_number() OVER () AS gid, *
    FROM (
        SELECT TRUE AS _all, {{cluster}} AS cluster, {{gpu_type}} AS gpu_type,
               {{partition}} AS "partition", {{account}} AS account, {{user}} AS "user",
               coalesce($fixed::DOUBLE, t._tv) AS target, list(p.pid ORDER BY p.pid) AS pids
        FROM ratio_people AS p
        LEFT JOIN targets AS t
          ON t._tp IS NOT DISTINCT FROM p."partition" AND t._tg IS NOT DISTINCT FROM p.gpu_type
        WHERE (len($partitions::VARCHAR[]) = 0
               OR list_contains($partitions::VARCHAR[], p."partition"))
          AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], p.cluster))
          AND (len($gpu_types::VARCHAR[]) = 0
               OR list_contains($gpu_types::VARCHAR[], p.gpu_type))
          AND (len($accounts::VARCHAR[]) = 0 OR list_contains($accounts::VARCHAR[], p.account))
          AND (len($users::VARCHAR[]) = 0 OR list_contains($users::VARCHAR[], p."user"))
        GROUP BY ALL
    )
),
pid_gid AS (
    SELECT unnest(pids) AS pid, gid, target FROM groups
),
rows AS (
    SELECT g.gid, c.excluded_reason, c.n, c.w, c.cpus::DOUBLE / c.gpus < g.target AS below
    FROM {{cube}} AS c
    JOIN pid_gid AS g USING (pid)
    WHERE ($min_gpus::INTEGER IS NULL OR c.gpus >= $min_gpus::INTEGER)
      AND {{over_time}}
),
per_gid AS MATERIALIZED (
    -- counted jobs, on one integer key
    SELECT gid, sum(n) AS n, sum(w) AS w,
           coalesce(sum(n) FILTER (WHERE below), 0) AS n_below,
           coalesce(sum(w) FILTER (WHERE below), 0) AS w_below
    FROM rows
    WHERE excluded_reason IS NULL
    GROUP BY gid
),
cut AS (
    -- the GPU-seconds below of the last group shown: only groups at or above it are named
    SELECT min(w_below) AS w_below
    FROM (SELECT w_below FROM per_gid WHERE w_below > 0 ORDER BY w_below DESC LIMIT $top)
),
top AS (
    SELECT g.* EXCLUDE (gid), c.n::BIGINT AS jobs, c.w::DOUBLE AS gpu_s,
           c.n_below::BIGINT AS n_below, c.w_below::DOUBLE AS w_below
    FROM per_gid AS c
    JOIN groups AS g USING (gid)
    WHERE c.w_below > 0 AND c.w_below >= (SELECT w_below FROM cut)
    ORDER BY c.w_below DESC, {{keys}}
    LIMIT $top
)
SELECT row_number() OVER (ORDER BY w_below DESC, {{keys}}) AS gid, *
FROM top
UNION ALL BY NAME
SELECT (SELECT count(*) FROM per_gid) AS groups,
       (SELECT coalesce(list({'reason': reason, 'jobs': jobs::BIGINT} ORDER BY reason), [])
        FROM (SELECT excluded_reason AS reason, sum(n) AS jobs FROM rows
              WHERE excluded_reason IS NOT NULL GROUP BY 1)) AS excluded
