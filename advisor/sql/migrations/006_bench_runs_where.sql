-- Where a benchmark ran: the Slurm cluster and partition of its job (SLURM_CLUSTER_NAME,
-- SLURM_JOB_PARTITION when the runner ran inside an allocation; NULL for runs made outside
-- Slurm and for runs stored before this migration), so that the dashboard's cluster and
-- partition filters apply to benchmarks as to jobs.
ALTER TABLE bench_runs ADD COLUMN cluster VARCHAR;
ALTER TABLE bench_runs ADD COLUMN "partition" VARCHAR;
