-- What a job used, beside what it was given (issue 23). All NULL where the source carries no
-- usage (most sites export no TotalCPU / TRESUsageIn* / jobstats summary): NULL is "unknown",
-- never "idle". CPU efficiency and GPU utilisation per job are derived in SQL
-- (advisor/sql/usage/jobs.sql), never stored, like the cores-per-GPU ratio.
ALTER TABLE jobs ADD COLUMN cpu_used_s DOUBLE;        -- TotalCPU (user + system), seconds
ALTER TABLE jobs ADD COLUMN cpu_time_alloc_s BIGINT;  -- CPUTimeRAW: elapsed x allocated CPUs
ALTER TABLE jobs ADD COLUMN mem_used_max_mb DOUBLE;   -- TRESUsageInMax mem: peak RSS of a task
ALTER TABLE jobs ADD COLUMN gpu_util_mean_pct DOUBLE; -- mean utilisation over the job's GPUs
ALTER TABLE jobs ADD COLUMN gpu_util_max_pct DOUBLE;  -- peak utilisation of one GPU (or task)
ALTER TABLE jobs ADD COLUMN gpu_mem_max_mb DOUBLE;    -- peak GPU memory used on one GPU (or task)
ALTER TABLE jobs ADD COLUMN usage_source VARCHAR;     -- sacct | jobstats: where the GPU figures came from
-- CPU efficiency of a job: CPU seconds used / (elapsed x CPUs allocated), CPUTimeRAW when the
-- elapsed time or the CPU count is unknown; NULL without usage or without allocated time.
-- A macro, not a view over jobs: later migrations may add columns to jobs freely.
CREATE MACRO usage_cpu_efficiency(cpu_used_s, elapsed_s, cpus, cpu_time_alloc_s) AS
    cpu_used_s / nullif(CASE WHEN elapsed_s > 0 AND cpus > 0 THEN elapsed_s * cpus
                             ELSE cpu_time_alloc_s END, 0);
