-- usage/months_refresh: fill {{table}} (usage_months, usage_people_months) from
-- usage/facts.sql (the facts placeholder, bound with no filter and the default thresholds),
-- inside the cube rebuild's transaction after emptying it. Each sum is the one
-- usage/summary.sql takes, per cell; {{keys}}: the table's cell columns after the month, each
-- with a trailing comma; {{counts}}: usage_months' efficiency counts (a leading comma), or empty.
INSERT INTO {{table}} BY NAME
WITH f AS (
{{facts}}
)
SELECT
    cluster,
    "partition",
    gpu_type,
    CAST(date_trunc('month', start) AS DATE) AS month,
    {{keys}}
    count(*) AS jobs,
    sum(gpu_hours) AS gpu_hours,
    sum(cores_per_gpu) AS sum_cores_per_gpu,
    count(*) FILTER (WHERE has_cpu_usage) AS jobs_with_usage,
    sum(gpu_hours) FILTER (WHERE has_cpu_usage) AS gpu_hours_cpu,
    sum(gpu_hours) FILTER (WHERE has_gpu_usage) AS gpu_hours_gpu,
    sum(cpu_used_s) FILTER (WHERE has_cpu_usage) AS cpu_used_s,
    sum(elapsed_s::DOUBLE * cpus) FILTER (WHERE has_cpu_usage) AS core_s,
    sum(elapsed_s::DOUBLE * gpus) FILTER (WHERE has_cpu_usage) AS gpu_s,
    sum(gpu_util_mean_pct * gpu_hours) FILTER (WHERE has_gpu_usage) AS util_gpu_hours,
    max(gpu_util_max_pct) AS gpu_util_peak_pct,
    count(*) FILTER (WHERE verdict = 'starved') AS starved_jobs,
    sum(gpu_hours) FILTER (WHERE verdict = 'starved') AS starved_gpu_hours,
    sum(gpu_hours) FILTER (WHERE verdict IS NOT NULL) AS verdict_gpu_hours,
    count(*) FILTER (WHERE verdict = 'over_provisioned') AS over_jobs,
    sum(gpu_hours) FILTER (WHERE verdict = 'over_provisioned') AS over_gpu_hours,
    sum(idle_cores_per_gpu * gpu_hours) FILTER (WHERE has_cpu_usage) AS idle_core_hours{{counts}}
FROM f
GROUP BY ALL
ORDER BY month
