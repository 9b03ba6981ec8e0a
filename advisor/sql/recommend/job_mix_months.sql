-- recommend/job_mix_months: the {{mix}} of recommend/job_mix summed from the derived table
-- job_mix_months (advisor.derived.cube) instead of jobs; only for open or month-aligned bounds
-- ($start, $end: first instants of months), which select whole months.
    SELECT "partition", gpu_type, cpus, gpus, gres_type, sum(jobs) AS jobs,
           sum(elapsed_s) AS elapsed_s, sum(gpu_seconds) AS gpu_seconds,
           min(first_start) AS first_start, max(last_end) AS last_end
    FROM job_mix_months
    WHERE ($partition::VARCHAR IS NULL OR "partition" = $partition::VARCHAR)
      AND ($gpu_type::VARCHAR IS NULL OR gpu_type = $gpu_type::VARCHAR)
      AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
      AND ($start::TIMESTAMP IS NULL OR month >= $start::TIMESTAMP)
      AND ($end::TIMESTAMP IS NULL OR month < $end::TIMESTAMP)
    GROUP BY ALL
