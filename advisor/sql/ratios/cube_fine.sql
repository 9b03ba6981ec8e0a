-- ratios/cube_fine: one pass over jobs into the two groupings the rebuilt cubes are made of, as a
-- TEMP table of this connection (dropped after the rebuild), each row with its job count and
-- GPU-seconds:
--   people = FALSE: per (cluster, GPU type, partition, month, state, interactive, GPUs, CPUs,
--     exclusion reason), ratio_cube's rows;
--   people = TRUE: per (cluster, GPU type, partition, account, user, GPUs, CPUs, exclusion
--     reason), what ratio_people and ratio_cube_people are made of.
-- GROUPING SETS scan jobs once into two small hash tables; grouping by all of those columns at
-- once (what the per-month people cube needs) costs several times more, so that cube is built
-- on first use instead (ratios/cube_people_months_refresh).
CREATE OR REPLACE TEMP TABLE _ratio_fine AS
WITH j AS (
{{jobs}}
)
SELECT grouping(account) = 0 AS people,
       cluster, gpu_type, "partition", account, "user", month, state, interactive, gpus, cpus,
       excluded_reason, count(*) AS jobs, coalesce(sum(gpu_seconds), 0) AS gpu_seconds
FROM j
GROUP BY GROUPING SETS (
    (cluster, gpu_type, "partition", month, state, interactive, gpus, cpus, excluded_reason),
    (cluster, gpu_type, "partition", account, "user", gpus, cpus, excluded_reason)
)
