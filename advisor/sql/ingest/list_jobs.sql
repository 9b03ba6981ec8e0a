-- Allocation rows for `advisor jobs` (<columns>: those asked for); every filter is optional
-- (NULL = no condition). cpu_efficiency is derived on read (migration 012), never stored.
SELECT {{columns}} FROM (
    SELECT *, usage_cpu_efficiency(cpu_used_s, elapsed_s, cpus, cpu_time_alloc_s) AS cpu_efficiency
    FROM jobs
    WHERE ($cluster IS NULL OR cluster = $cluster)
      AND ($since IS NULL OR submit >= $since)
      AND ($until IS NULL OR submit < $until)
      AND ($state IS NULL OR state = $state)
      AND ($gpu_type IS NULL OR lower(gpu_type) = lower($gpu_type) OR lower(gpu_type_raw) = lower($gpu_type))
      AND ($account IS NULL OR account = $account)
      AND ($user IS NULL OR "user" = $user)
    ORDER BY submit DESC, cluster, job_id_raw
    LIMIT coalesce($lim, 9223372036854775807)
)
