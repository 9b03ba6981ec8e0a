-- usage/facts: every GPU job with an allocation that passes the filters (one row each), with
-- what it was given (cores per GPU, GPU-seconds) and what it used (CPU efficiency, GPU
-- utilisation), its group keys, and its verdict with the numbers behind it. Derived on read:
-- nothing here is stored (issue 23).
-- A job counts when it started with GPUs > 0 and CPUs > 0 (as ratios/jobs_facts.sql). The
-- verdict needs usage: 'starved' when its cores were nearly saturated (cpu_efficiency >=
-- $starved_cpu_eff) and its GPUs mostly idle (mean utilisation <= $starved_gpu_util_pct);
-- 'over_provisioned' when idle cores per GPU (cores per GPU x (1 - efficiency)) reach
-- $idle_cores_per_gpu; 'ok' otherwise; NULL without the figures it needs. A job shorter than
-- $min_elapsed_s gets no verdict (start-up dominates it). Where the job's cgroup CPU pressure
-- was measured (psi_status 'measured', issue 37) the verdict rests on it instead: 'starved'
-- when its tasks stalled for a CPU (PSI some) at least $starved_psi_some of the time, else
-- the efficiency rules for over-provisioning, else 'ok'; `basis` says which ('measured',
-- 'usage' or NULL).
-- {{source}}: jobs (the derived usage_months: the changed slices' _slice_jobs); {{where}}:
-- filters/jobs_where on the start time. Parameters as ratios/jobs_facts.sql: $start, $end,
-- $states, $partitions, $clusters, $gpu_types, $accounts, $users, $min_gpus; and the thresholds
-- above.
WITH j AS (
    SELECT j.*,
        usage_cpu_efficiency(j.cpu_used_s, j.elapsed_s, j.cpus, j.cpu_time_alloc_s) AS cpu_efficiency,
        j.cpus::DOUBLE / j.gpus AS cores_per_gpu,
        j.gpus::DOUBLE * greatest(coalesce(j.elapsed_s, 0), 0) / 3600 AS gpu_hours,
        -- a share of the time it ran, so at most 1 (the fold's slack can leave a hair above)
        CASE WHEN j.psi_status = 'measured'
             THEN least(j.psi_some_s / nullif(j.psi_covered_s, 0), 1.0) END AS psi_some_share,
        CASE WHEN j.psi_status = 'measured'
             THEN least(j.psi_full_s / nullif(j.psi_covered_s, 0), 1.0) END AS psi_full_share
    FROM {{source}} AS j
    WHERE j.start IS NOT NULL AND j.gpus > 0 AND j.cpus > 0
      AND {{where}}
), v AS (
    SELECT *,
        cores_per_gpu * (1 - least(cpu_efficiency, 1)) AS idle_cores_per_gpu,
        CASE
            WHEN coalesce(elapsed_s, 0) < $min_elapsed_s THEN NULL
            WHEN psi_some_share >= $starved_psi_some THEN 'starved'
            WHEN psi_some_share IS NOT NULL
                 AND cores_per_gpu * (1 - least(cpu_efficiency, 1)) >= $idle_cores_per_gpu
                THEN 'over_provisioned'
            WHEN psi_some_share IS NOT NULL THEN 'ok'
            WHEN cpu_efficiency IS NULL THEN NULL
            WHEN cpu_efficiency >= $starved_cpu_eff AND gpu_util_mean_pct <= $starved_gpu_util_pct
                THEN 'starved'
            WHEN cores_per_gpu * (1 - least(cpu_efficiency, 1)) >= $idle_cores_per_gpu
                THEN 'over_provisioned'
            -- saturated cores, GPU use unknown: no verdict rather than a guess
            WHEN cpu_efficiency >= $starved_cpu_eff AND gpu_util_mean_pct IS NULL THEN NULL
            ELSE 'ok'
        END AS verdict,
        CASE
            WHEN coalesce(elapsed_s, 0) < $min_elapsed_s THEN NULL
            WHEN psi_some_share IS NOT NULL THEN 'measured'
            WHEN cpu_efficiency IS NOT NULL THEN 'usage'
        END AS basis
    FROM j
)
SELECT
    cluster, job_id, job_id_raw, submit, start, state,
    coalesce(gpu_type, '(untyped)') AS gpu_type,
    "partition", account, "user",
    strftime(start, '%Y-%m') AS month,
    gpus AS gpu_count,
    -- the power of two at or above the ratio: bins 1, 2, 4, 8, ... cores per GPU
    CAST(pow(2, ceil(log2(greatest(cores_per_gpu, 1)))) AS INTEGER) AS cores_per_gpu_bin,
    elapsed_s, cpus, gpus, cores_per_gpu, gpu_hours,
    cpu_used_s, cpu_efficiency, idle_cores_per_gpu,
    gpu_util_mean_pct, gpu_util_max_pct, gpu_mem_max_mb, usage_source,
    cpu_efficiency IS NOT NULL AS has_cpu_usage,
    gpu_util_mean_pct IS NOT NULL AS has_gpu_usage,
    psi_status, psi_some_share, psi_full_share,
    psi_some_share IS NOT NULL AS has_pressure,
    verdict, basis
FROM v
