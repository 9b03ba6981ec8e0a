-- usage/medians_months: the median job's CPU efficiency (to the hundredth, as usage/summary.sql
-- takes it) per group of the groupings of usage/summary_months.sql, from each cell's jobs
-- counted by that value (usage_months.cpu_eff_counts): the same median as over the jobs,
-- without reading them. Placeholders as usage/summary_months.sql, and sets_eff (the groupings
-- with eff added). The median of N values: the mean of the values at places floor((N-1)/2)
-- and ceil((N-1)/2) in order (DuckDB's median). A group without a job with usage has no row.
-- Parameters: $start, $end, $partitions, $clusters, $gpu_types.
WITH f AS (
    SELECT * REPLACE (strftime(month, '%Y-%m') AS month)
    FROM usage_months
    WHERE cpu_eff_counts IS NOT NULL
      AND ($start::TIMESTAMP IS NULL OR month >= $start::TIMESTAMP)
      AND ($end::TIMESTAMP IS NULL OR month < $end::TIMESTAMP)
      AND (len($partitions::VARCHAR[]) = 0 OR list_contains($partitions::VARCHAR[], "partition"))
      AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
      AND (len($gpu_types::VARCHAR[]) = 0 OR list_contains($gpu_types::VARCHAR[], gpu_type))
), e AS (
    SELECT * EXCLUDE (cpu_eff_counts),
        unnest(map_keys(cpu_eff_counts)) AS eff, unnest(map_values(cpu_eff_counts)) AS n
    FROM f
), g AS (
    SELECT {{grouping}} AS _set, {{keys}} eff, sum(n) AS n
    FROM e
    GROUP BY GROUPING SETS ({{sets_eff}})
), c AS (
    SELECT *,
        sum(n) OVER (PARTITION BY _set{{order}} ORDER BY eff
                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
        sum(n) OVER (PARTITION BY _set{{order}}) AS total
    FROM g
)
SELECT _set, {{keys}}
    (min(eff) FILTER (WHERE upto > (total - 1) // 2)
     + min(eff) FILTER (WHERE upto > total // 2)) / 2 AS cpu_efficiency_p50
FROM c
GROUP BY ALL
