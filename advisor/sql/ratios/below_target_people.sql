-- ratios/below_target_people: rank account/user groups by GPU-seconds below a target ratio,
-- from the people cubes' integer counts (no percentiles): what advisor.ratios.below_target
-- reads first, so that percentiles are computed only for the top groups.
-- Placeholders (fixed text chosen in advisor.ratios, never user input): people_where
-- (ratios/people_where); gid (the group's number: arithmetic on ratio_people's per-column ids
-- of the group keys, a subset of cluster, gpu_type, partition, account, user, so that numbers
-- sort as the key values do); cube
-- (ratio_cube_people, or ratio_cube_people_months for state filters and month bounds) and
-- over_time (the month/state conditions on that cube); names (the key columns of the group's
-- people, any_value(p.<key>) AS <key> each, or TRUE AS _all without keys).
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
    -- the pids the filters keep, with their group's number and their target
    SELECT p.pid, {{gid}} AS gid, coalesce($fixed::DOUBLE, t._tv) AS target
    FROM ratio_people AS p
    LEFT JOIN targets AS t
      ON t._tp IS NOT DISTINCT FROM p."partition" AND t._tg IS NOT DISTINCT FROM p.gpu_type
    WHERE {{people_where}}
),
per_gid AS MATERIALIZED (
    -- counted jobs, summed on the group's number
    SELECT g.gid, sum(c.jobs) AS n, sum(c.gpu_seconds) AS w,
           coalesce(sum(c.jobs) FILTER (WHERE c.cpus::DOUBLE / c.gpus < g.target), 0) AS n_below,
           coalesce(sum(c.gpu_seconds) FILTER (WHERE c.cpus::DOUBLE / c.gpus < g.target), 0) AS w_below
    FROM {{cube}} AS c
    JOIN people AS g USING (pid)
    WHERE c.excluded_reason IS NULL
      AND ($min_gpus::INTEGER IS NULL OR c.gpus >= $min_gpus::INTEGER)
      AND {{over_time}}
    GROUP BY g.gid
),
top AS (
    -- group numbers follow the order of the key values, so ties fall in key order
    SELECT * FROM per_gid WHERE w_below > 0 ORDER BY w_below DESC, gid LIMIT $top
)
SELECT row_number() OVER (ORDER BY t.w_below DESC, t.gid) AS gid,
       {{names}}, min(g.target) AS target, t.n::BIGINT AS jobs, t.w::DOUBLE AS gpu_s,
       t.n_below::BIGINT AS n_below, t.w_below::DOUBLE AS w_below,
       list(p.pid ORDER BY p.pid) AS pids  -- the people each top group sums
FROM top AS t
JOIN people AS g ON g.gid = t.gid
JOIN ratio_people AS p ON p.pid = g.pid
GROUP BY t.gid, t.n, t.w, t.n_below, t.w_below
UNION ALL BY NAME
SELECT (SELECT count(*) FROM per_gid) AS groups,
       (SELECT coalesce(list({'reason': reason, 'jobs': jobs::BIGINT} ORDER BY reason), [])
        FROM (SELECT c.excluded_reason AS reason, sum(c.jobs) AS jobs
              FROM {{cube}} AS c
              WHERE c.excluded_reason IS NOT NULL
                AND c.pid IN (SELECT pid FROM people)
                AND ($min_gpus::INTEGER IS NULL OR c.gpus >= $min_gpus::INTEGER)
                AND {{over_time}}
              GROUP BY 1)) AS excluded
