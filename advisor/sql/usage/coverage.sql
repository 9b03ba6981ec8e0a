-- usage/coverage: per cluster, GPU jobs with usage data (CPU, GPU), their share of GPU-hours,
-- the span of start times they cover and where the GPU figures came from (advisor data status).
SELECT cluster,
    count(*) AS gpu_jobs,
    count(cpu_used_s) AS jobs_with_cpu_usage,
    count(gpu_util_mean_pct) AS jobs_with_gpu_usage,
    sum(w) FILTER (WHERE cpu_used_s IS NOT NULL) / nullif(sum(w), 0) AS share_cpu,
    sum(w) FILTER (WHERE gpu_util_mean_pct IS NOT NULL) / nullif(sum(w), 0) AS share_gpu,
    min(start) FILTER (WHERE cpu_used_s IS NOT NULL OR gpu_util_mean_pct IS NOT NULL) AS first_start,
    max(start) FILTER (WHERE cpu_used_s IS NOT NULL OR gpu_util_mean_pct IS NOT NULL) AS last_start,
    list_sort(list_distinct(list(usage_source) FILTER (WHERE usage_source IS NOT NULL))) AS sources
FROM (SELECT *, gpus::DOUBLE * greatest(coalesce(elapsed_s, 0), 0) AS w FROM jobs WHERE gpus > 0)
GROUP BY cluster
ORDER BY cluster
