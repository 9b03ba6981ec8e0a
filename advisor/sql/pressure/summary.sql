-- pressure/summary: measured CPU pressure of GPU jobs (usage/facts.sql, the facts placeholder)
-- per group ({{keys}}: the quoted group columns, then a comma; {{order}}: the same for ORDER
-- BY). A job's stall share is its cgroup's PSI stall seconds over the seconds its records cover
-- (some: at least one task waited for a CPU; full: all of them did). Shares are GPU-hour
-- weighted over the measured jobs; the GPU-hours held by CPU waiting lie between GPU-hours x
-- full share and GPU-hours x some share (docs/pressure.md says what the bounds assume).
WITH f AS (
{{facts}}
)
SELECT {{keys}}
    count(*) AS jobs,
    sum(gpu_hours) AS gpu_hours,
    count(*) FILTER (WHERE has_pressure) AS jobs_measured,
    count(*) FILTER (WHERE psi_status = 'unavailable') AS jobs_unavailable,
    coalesce(sum(gpu_hours) FILTER (WHERE has_pressure), 0) AS gpu_hours_measured,
    sum(gpu_hours) FILTER (WHERE has_pressure) / nullif(sum(gpu_hours), 0) AS share_measured,
    avg(cores_per_gpu) FILTER (WHERE has_pressure) AS mean_cores_per_gpu,
    sum(psi_some_share * gpu_hours) FILTER (WHERE has_pressure)
        / nullif(sum(gpu_hours) FILTER (WHERE has_pressure), 0) AS some_share,
    sum(psi_full_share * gpu_hours) FILTER (WHERE has_pressure AND psi_full_share IS NOT NULL)
        / nullif(sum(gpu_hours) FILTER (WHERE has_pressure AND psi_full_share IS NOT NULL), 0)
        AS full_share,
    quantile_cont(psi_some_share, 0.5) FILTER (WHERE has_pressure) AS some_share_p50,
    quantile_cont(psi_some_share, 0.9) FILTER (WHERE has_pressure) AS some_share_p90,
    count(*) FILTER (WHERE has_pressure AND psi_some_share >= $starved_psi_some) AS jobs_stalled,
    coalesce(sum(gpu_hours * coalesce(psi_full_share, 0)) FILTER (WHERE has_pressure), 0)
        AS held_gpu_hours_low,
    coalesce(sum(gpu_hours * psi_some_share) FILTER (WHERE has_pressure), 0)
        AS held_gpu_hours_high
FROM f
GROUP BY ALL
ORDER BY {{order}}
