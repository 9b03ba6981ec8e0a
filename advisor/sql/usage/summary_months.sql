-- usage/summary_months: usage/summary.sql's columns from {{table}} (usage_months, or
-- usage_people_months for groups by account or user) instead of every job,
-- for month-aligned bounds (a cell's month is its jobs' month of start) and the default
-- thresholds the table was built with. Placeholders as usage/summary.sql; the keys are
-- columns of the table. The median job's efficiency is not a sum: NULL here, taken from the
-- cells' counts (usage/medians_months.sql) when a selected job carries usage. Parameters: $start, $end,
-- $partitions, $clusters, $gpu_types, $price_types, $price_usd.
WITH f AS (
    SELECT * REPLACE (strftime(month, '%Y-%m') AS month),
        list_extract($price_usd::DOUBLE[],
                     list_position($price_types::VARCHAR[], upper(gpu_type))) AS price
    FROM {{table}}
    WHERE ($start::TIMESTAMP IS NULL OR month >= $start::TIMESTAMP)
      AND ($end::TIMESTAMP IS NULL OR month < $end::TIMESTAMP)
      AND (len($partitions::VARCHAR[]) = 0 OR list_contains($partitions::VARCHAR[], "partition"))
      AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
      AND (len($gpu_types::VARCHAR[]) = 0 OR list_contains($gpu_types::VARCHAR[], gpu_type))
)
SELECT {{grouping}} AS _set, {{keys}}
    coalesce(sum(jobs), 0) AS jobs,
    sum(gpu_hours) AS gpu_hours,
    coalesce(sum(jobs_with_usage), 0) AS jobs_with_usage,
    sum(gpu_hours_cpu) / nullif(sum(gpu_hours), 0) AS share_cpu,
    sum(gpu_hours_gpu) / nullif(sum(gpu_hours), 0) AS share_gpu,
    sum(sum_cores_per_gpu) / nullif(sum(jobs), 0) AS mean_cores_per_gpu,
    sum(cpu_used_s) / nullif(sum(core_s), 0) AS cpu_efficiency,
    NULL::DOUBLE AS cpu_efficiency_p50,
    sum(cpu_used_s) / nullif(sum(gpu_s), 0) AS busy_cores_per_gpu,
    sum(util_gpu_hours) / nullif(sum(gpu_hours_gpu), 0) AS gpu_util_mean_pct,
    max(gpu_util_peak_pct) AS gpu_util_peak_pct,
    coalesce(sum(starved_jobs), 0) AS starved_jobs,
    coalesce(sum(starved_gpu_hours), 0) AS starved_gpu_hours,
    sum(starved_gpu_hours) / nullif(sum(verdict_gpu_hours), 0) AS share_starved,
    coalesce(sum(starved_gpu_hours * price) FILTER (WHERE starved_jobs > 0), 0) AS starved_usd,
    coalesce(bool_and(price IS NOT NULL) FILTER (WHERE starved_jobs > 0), TRUE) AS all_priced,
    coalesce(sum(over_jobs), 0) AS over_jobs,
    coalesce(sum(over_gpu_hours), 0) AS over_gpu_hours,
    coalesce(sum(idle_core_hours), 0) AS idle_core_hours
FROM f
GROUP BY GROUPING SETS ({{sets}})
ORDER BY _set{{order}}
