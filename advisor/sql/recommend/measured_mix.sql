-- recommend/measured_mix: the measured part of recommend/job_mix's rows: per (partition, GPU
-- family, CPUs, GPUs) the GPU-hours of the jobs whose cgroup CPU pressure was measured, and those
-- GPU-hours weighted by each job's stall share (some: an upper bound of the GPU time CPU waiting
-- held; full: a lower one, docs/pressure.md). Parameters and job selection as
-- recommend/job_mix_jobs. {{keys}}: more keys before the row's (the month and the cluster, for
-- the loss by month), or nothing.
SELECT {{keys}} "partition", coalesce(gpu_type, '(untyped)') AS gpu_type, cpus, gpus,
       sum(elapsed_s * gpus) / 3600.0 AS gpu_hours,
       sum(elapsed_s * gpus / 3600.0 * least(psi_some_s / psi_covered_s, 1.0)) AS held_some,
       sum(elapsed_s * gpus / 3600.0 * least(coalesce(psi_full_s, 0) / psi_covered_s, 1.0))
           AS held_full
FROM jobs
WHERE gpus > 0 AND cpus > 0 AND elapsed_s > 0 AND start IS NOT NULL
  AND psi_status = 'measured' AND psi_covered_s > 0
  AND ($partition::VARCHAR IS NULL OR "partition" = $partition::VARCHAR)
  AND ($gpu_type::VARCHAR IS NULL OR coalesce(gpu_type, '(untyped)') = $gpu_type::VARCHAR)
  AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
  AND ($start::TIMESTAMP IS NULL OR start >= $start::TIMESTAMP)
  AND ($end::TIMESTAMP IS NULL OR start < $end::TIMESTAMP)
GROUP BY ALL
