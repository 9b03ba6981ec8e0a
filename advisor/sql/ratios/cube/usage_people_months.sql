-- usage_people_months: usage_months' sums per (cluster, partition, GPU type, month of start,
-- account, user) instead of GPUs and cores-per-GPU bin, under the default usage thresholds:
-- what the dashboard's groups by account or user read instead of every job
-- (usage/summary_months.sql over this table, advisor.usage.top_groups). No efficiency counts:
-- the median job's efficiency of a person is taken from the jobs (advisor usage --by user).
-- Made after usage_months, with its columns, so that the two keep the same sums.
{{create}} usage_people_months AS
SELECT cluster, "partition", gpu_type, month, NULL::VARCHAR AS account, NULL::VARCHAR AS "user",
    * EXCLUDE (cluster, "partition", gpu_type, month, gpu_count, cores_per_gpu_bin, cpu_eff_counts)
FROM usage_months
LIMIT 0
