-- ratios/summary_people: the rows of ratios/summary, read from a people cube with integer group
-- numbers instead of names: per group and distinct ratio (and fair share, where the node
-- inventory has any), the counted jobs and their GPU-seconds, in (group, ratio) order; then,
-- with k NULL, one row per exclusion reason, under cores_per_gpu = minus its position in $reasons.
-- A group is one integer, k: the number of the pid's values of the people keys the query groups
-- by (gid: arithmetic on ratio_people's per-column ids, so that numbers sort as the names do),
-- combined by mixed radix with the cube's own key columns the query groups by (month, GPU
-- count, interactive label). advisor.ratios decodes it and names the groups afterwards, once
-- per id: summing on one integer is cheaper than grouping on names, or on one column per key.
-- Placeholders, fixed text chosen in advisor.ratios: people_where (ratios/people_where); gid
-- (cast to the type every group number fits, INTEGER or BIGINT); key (the expression of k
-- over gid and the cube's columns); cube (a people cube) and conditions (its month, state and
-- GPU-count conditions); ratio (the cube's cores-per-GPU expression); fs (", fair.fair_share_cores_per_gpu" where
-- ratio_fair_share has rows, else nothing: a column less to group by) and fs_column (the same,
-- as ", CASE WHEN c.excluded_reason IS NULL THEN g.fair_share_cores_per_gpu END AS
-- fair_share_cores_per_gpu").
-- Parameters: those of ratios/jobs_facts, $reasons (VARCHAR[]), $labels (the interactive
-- labels, when grouped by).
WITH people AS (
    SELECT p.pid, {{gid}} AS gid{{fs}}
    FROM ratio_people AS p
    LEFT JOIN ratio_fair_share AS fair USING (cluster, gpu_type)
    WHERE {{people_where}}
)
SELECT CASE WHEN c.excluded_reason IS NULL THEN {{key}} END AS k,
       CASE WHEN c.excluded_reason IS NULL THEN {{ratio}}
            ELSE -list_position($reasons::VARCHAR[], c.excluded_reason) END AS cores_per_gpu{{fs_column}},
       sum(c.jobs)::BIGINT AS jobs, sum(c.gpu_seconds)::BIGINT AS gpu_seconds
FROM {{cube}} AS c
JOIN people AS g USING (pid)
WHERE {{conditions}}
GROUP BY ALL
ORDER BY k NULLS LAST, cores_per_gpu
