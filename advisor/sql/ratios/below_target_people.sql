-- ratios/below_target_people: rank account/user groups by GPU-seconds below a target ratio,
-- from the people cubes' integer counts, and give the top groups' rows of ratios/summary in the
-- same statement: what advisor.ratios.below_target reads. The cube rows of the people the
-- filters keep are joined to their group once (counted), then summed per group for the ranking
-- and per distinct ratio for the top groups only (their percentiles are computed in numpy).
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
-- Rows: the top groups (w_below > 0, most first, ties by keys), each with its rows of
-- ratios/summary as parallel lists in ratio order (dist_ratio, dist_jobs, dist_gpu_s and
-- dist_fair, the fair share of the node type, NULL where the inventory has none), then one row
-- (gid NULL) with the number of groups that have counted jobs and the exclusions by reason.
WITH targets AS (
    SELECT unnest($target_partitions::VARCHAR[]) AS _tp,
           unnest($target_gpu_types::VARCHAR[]) AS _tg,
           unnest($target_values::DOUBLE[]) AS _tv
),
people AS MATERIALIZED (
    -- the pids the filters keep, with their group's number and their target
    SELECT p.pid, {{gid}} AS gid, coalesce($fixed::DOUBLE, t._tv) AS target,
           fair.fair_share_cores_per_gpu
    FROM ratio_people AS p
    LEFT JOIN targets AS t
      ON t._tp IS NOT DISTINCT FROM p."partition" AND t._tg IS NOT DISTINCT FROM p.gpu_type
    LEFT JOIN ratio_fair_share AS fair USING (cluster, gpu_type)
    WHERE {{people_where}}
),
counted AS MATERIALIZED (
    -- the counted cube rows of those people, with their group, target and ratio
    SELECT g.gid, g.target, c.cpus::DOUBLE / c.gpus AS cores_per_gpu,
           g.fair_share_cores_per_gpu, c.jobs, c.gpu_seconds
    FROM {{cube}} AS c
    JOIN people AS g USING (pid)
    WHERE c.excluded_reason IS NULL
      AND ($min_gpus::INTEGER IS NULL OR c.gpus >= $min_gpus::INTEGER)
      AND {{over_time}}
),
per_gid AS MATERIALIZED (
    SELECT gid, sum(jobs) AS n, sum(gpu_seconds) AS w,
           coalesce(sum(jobs) FILTER (WHERE cores_per_gpu < target), 0) AS n_below,
           coalesce(sum(gpu_seconds) FILTER (WHERE cores_per_gpu < target), 0) AS w_below
    FROM counted
    GROUP BY gid
),
top AS MATERIALIZED (
    -- group numbers follow the order of the key values, so ties fall in key order
    SELECT * FROM per_gid WHERE w_below > 0 ORDER BY w_below DESC, gid LIMIT $top
),
dist AS (
    -- the top groups' rows of ratios/summary: per distinct ratio (and fair share)
    SELECT gid, cores_per_gpu, fair_share_cores_per_gpu, sum(jobs)::BIGINT AS jobs,
           sum(gpu_seconds)::BIGINT AS gpu_seconds
    FROM counted
    WHERE gid IN (SELECT gid FROM top)
    GROUP BY ALL
),
dists AS (
    -- one order for the four lists: (ratio, fair share) is distinct within a group
    SELECT gid, list(cores_per_gpu ORDER BY cores_per_gpu, fair_share_cores_per_gpu) AS dist_ratio,
           list(jobs ORDER BY cores_per_gpu, fair_share_cores_per_gpu) AS dist_jobs,
           list(gpu_seconds ORDER BY cores_per_gpu, fair_share_cores_per_gpu) AS dist_gpu_s,
           list(fair_share_cores_per_gpu ORDER BY cores_per_gpu, fair_share_cores_per_gpu) AS dist_fair
    FROM dist AS d
    GROUP BY gid
)
SELECT row_number() OVER (ORDER BY t.w_below DESC, t.gid) AS gid,
       {{names}}, min(g.target) AS target, t.n::BIGINT AS jobs, t.w::DOUBLE AS gpu_s,
       t.n_below::BIGINT AS n_below, t.w_below::DOUBLE AS w_below,
       any_value(d.dist_ratio) AS dist_ratio, any_value(d.dist_jobs) AS dist_jobs,
       any_value(d.dist_gpu_s) AS dist_gpu_s, any_value(d.dist_fair) AS dist_fair
FROM top AS t
JOIN dists AS d ON d.gid = t.gid
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
