-- ratios/cube_people_facts: the columns of ratios/jobs_facts, read from a people cube and
-- ratio_people (the names behind each pid). The cube placeholder is ratio_cube_people (all
-- time: queries without month or interactive keys, state filters or time bounds) or
-- ratio_cube_people_months (per month, state and interactive: time bounds on the first
-- instant of a month; stored in month order, so a time range reads only its months); the
-- over_time placeholder is the month/state conditions for it (advisor.ratios decides both, and
-- the same two serve ratios/below_target_people).
-- Each pid is first given the integer id (gid) of the group it falls in: its values of the
-- people keys the query groups by, and its fair share. Cube rows are summed per (gid, ratio,
-- and the month/GPUs/interactive keys the query groups by) on integers, then named once per
-- gid: grouping on the names, or on every pid (a user has one per partition and GPU type),
-- was most of an account/user summary's time.
-- Placeholders, all fixed text chosen in advisor.ratios: people_where (ratios/people_where);
-- cluster, gpu_type, partition, account, user (the column when the query groups by it, else a
-- typed NULL; the same for month, gpu_count, interactive).
WITH groups AS MATERIALIZED (
    -- one row per output group: its key values, its fair share and its pids
    SELECT row_number() OVER () AS gid, *
    FROM (
        SELECT {{cluster}} AS cluster, {{gpu_type}} AS gpu_type, {{partition}} AS "partition",
               {{account}} AS account, {{user}} AS "user", fair.fair_share_cores_per_gpu,
               list(p.pid) AS pids
        FROM ratio_people AS p
        LEFT JOIN ratio_fair_share AS fair USING (cluster, gpu_type)
        WHERE {{people_where}}
        GROUP BY ALL
    )
),
pid_gid AS (
    SELECT unnest(pids) AS pid, gid FROM groups
),
per_gid AS (
    SELECT g.gid, {{month}} AS month, {{gpu_count}} AS gpu_count,
           {{interactive}} AS interactive, c.cpus::DOUBLE / c.gpus AS cores_per_gpu,
           c.excluded_reason, sum(c.jobs) AS jobs, sum(c.gpu_seconds) AS gpu_seconds
    FROM {{cube}} AS c
    JOIN pid_gid AS g USING (pid)
    WHERE {{over_time}}
      AND ($min_gpus::INTEGER IS NULL OR c.gpus >= $min_gpus::INTEGER)
    GROUP BY ALL
)
SELECT
    TRUE AS _all,
    g.cluster,
    g.gpu_type,
    g."partition",
    g.account,
    g."user",
    strftime(c.month, '%Y-%m') AS month,
    c.gpu_count,
    c.interactive,
    c.cores_per_gpu,
    c.jobs,
    c.gpu_seconds,
    c.excluded_reason,
    g.fair_share_cores_per_gpu
FROM per_gid AS c
JOIN groups AS g USING (gid)
