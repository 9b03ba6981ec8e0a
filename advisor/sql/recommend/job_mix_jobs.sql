-- recommend/job_mix_jobs: the {{mix}} of recommend/job_mix read from jobs: per (partition, GPU
-- family, CPUs, GPUs, GRES spelling) of the jobs that ran (elapsed > 0) with known CPUs and GPUs
-- and start in [$start, $end).
    SELECT "partition", coalesce(gpu_type, '(untyped)') AS gpu_type, cpus, gpus,
           lower(gpu_type_raw) AS gres_type, count(*) AS jobs, sum(elapsed_s) AS elapsed_s,
           sum(elapsed_s * gpus) AS gpu_seconds, min(start) AS first_start,
           max(coalesce("end", start + to_seconds(elapsed_s))) AS last_end
    FROM jobs
    WHERE gpus > 0 AND cpus > 0 AND elapsed_s > 0 AND start IS NOT NULL
      AND ($partition::VARCHAR IS NULL OR "partition" = $partition::VARCHAR)
      AND ($gpu_type::VARCHAR IS NULL OR coalesce(gpu_type, '(untyped)') = $gpu_type::VARCHAR)
      AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
      AND ($start::TIMESTAMP IS NULL OR start >= $start::TIMESTAMP)
      AND ($end::TIMESTAMP IS NULL OR start < $end::TIMESTAMP)
    GROUP BY ALL
