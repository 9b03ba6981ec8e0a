-- ratios/cube_job_mix_refresh: rebuild job_mix_months from {{source}} (jobs, or the changed
-- slices' _slice_jobs; inside the cube rebuild's
-- transaction, after emptying it), with the rules of recommend/job_mix, in month order.
INSERT INTO job_mix_months
SELECT
    cluster,
    "partition",
    coalesce(gpu_type, '(untyped)') AS gpu_type,
    cpus,
    gpus,
    CAST(date_trunc('month', start) AS DATE) AS month,
    lower(gpu_type_raw) AS gres_type,
    count(*) AS jobs,
    sum(elapsed_s) AS elapsed_s,
    sum(elapsed_s * gpus) AS gpu_seconds,
    min(start) AS first_start,
    max(coalesce("end", start + to_seconds(elapsed_s))) AS last_end
FROM {{source}}
WHERE gpus > 0 AND cpus > 0 AND elapsed_s > 0 AND start IS NOT NULL
GROUP BY ALL
ORDER BY month
