-- usage/summary: usage per group of usage/facts.sql (the facts placeholder), for several
-- groupings in one pass over the facts. Placeholders: keys (the quoted columns of every
-- grouping and a trailing comma, or empty), sets (the groupings, e.g. ("user"), (), ("bin")),
-- grouping (grouping() of those columns, or 0: which grouping a row belongs to) and order
-- (", " and the columns, or empty). Parameters: those of facts.sql, and $price_types /
-- $price_usd (VARCHAR[] upper-case / DOUBLE[]: on-demand USD per GPU-hour by GPU type).
-- Efficiency over a group is CPU seconds over core-seconds of the jobs with usage (a job's
-- weight is its core-seconds); GPU utilisation is weighted by GPU-hours.
WITH f AS (
{{facts}}
)
SELECT {{grouping}} AS _set, {{keys}}
    count(*) AS jobs,
    sum(gpu_hours) AS gpu_hours,
    count(*) FILTER (WHERE has_cpu_usage) AS jobs_with_usage,
    sum(gpu_hours) FILTER (WHERE has_cpu_usage) / nullif(sum(gpu_hours), 0) AS share_cpu,
    sum(gpu_hours) FILTER (WHERE has_gpu_usage) / nullif(sum(gpu_hours), 0) AS share_gpu,
    avg(cores_per_gpu) AS mean_cores_per_gpu,
    sum(cpu_used_s) FILTER (WHERE has_cpu_usage)
        / nullif(sum(elapsed_s::DOUBLE * cpus) FILTER (WHERE has_cpu_usage), 0) AS cpu_efficiency,
    -- the median job's efficiency to the hundredth (whole percent, as shown): usage_months
    -- holds each cell's jobs counted by that value, which gives the same median
    median(round(cpu_efficiency, 2)) AS cpu_efficiency_p50,
    sum(cpu_used_s) FILTER (WHERE has_cpu_usage)
        / nullif(sum(elapsed_s::DOUBLE * gpus) FILTER (WHERE has_cpu_usage), 0) AS busy_cores_per_gpu,
    sum(gpu_util_mean_pct * gpu_hours) FILTER (WHERE has_gpu_usage)
        / nullif(sum(gpu_hours) FILTER (WHERE has_gpu_usage), 0) AS gpu_util_mean_pct,
    max(gpu_util_max_pct) AS gpu_util_peak_pct,
    count(*) FILTER (WHERE verdict = 'starved') AS starved_jobs,
    coalesce(sum(gpu_hours) FILTER (WHERE verdict = 'starved'), 0) AS starved_gpu_hours,
    sum(gpu_hours) FILTER (WHERE verdict = 'starved')
        / nullif(sum(gpu_hours) FILTER (WHERE verdict IS NOT NULL), 0) AS share_starved,
    coalesce(sum(gpu_hours * list_extract($price_usd::DOUBLE[],
                                          list_position($price_types::VARCHAR[], upper(gpu_type))))
                 FILTER (WHERE verdict = 'starved'), 0) AS starved_usd,
    -- (a starved job of a GPU type without a price leaves the group's dollar value unknown)
    coalesce(bool_and(list_position($price_types::VARCHAR[], upper(gpu_type)) IS NOT NULL)
                 FILTER (WHERE verdict = 'starved'), TRUE) AS all_priced,
    count(*) FILTER (WHERE verdict = 'over_provisioned') AS over_jobs,
    coalesce(sum(gpu_hours) FILTER (WHERE verdict = 'over_provisioned'), 0) AS over_gpu_hours,
    coalesce(sum(idle_cores_per_gpu * gpu_hours) FILTER (WHERE has_cpu_usage), 0) AS idle_core_hours
FROM f
GROUP BY GROUPING SETS ({{sets}})
ORDER BY _set{{order}}
