-- usage_people_months: usage_months' sums per (cluster, partition, GPU type, month of start,
-- account, user) instead of GPUs and cores-per-GPU bin, under the default usage thresholds:
-- what the dashboard's groups by account or user read instead of every job
-- (usage/summary_months.sql over this table, advisor.usage.top_groups). No efficiency counts:
-- the median job's efficiency of a person is taken from the jobs (advisor usage --by user).
{{create}} usage_people_months (
    cluster           VARCHAR,
    "partition"       VARCHAR,
    gpu_type          VARCHAR,
    month             DATE,
    account           VARCHAR,
    "user"            VARCHAR,
    jobs              BIGINT NOT NULL,
    gpu_hours         DOUBLE,
    sum_cores_per_gpu DOUBLE,
    jobs_with_usage   BIGINT NOT NULL,
    gpu_hours_cpu     DOUBLE,
    gpu_hours_gpu     DOUBLE,
    cpu_used_s        DOUBLE,
    core_s            DOUBLE,
    gpu_s             DOUBLE,
    util_gpu_hours    DOUBLE,
    gpu_util_peak_pct DOUBLE,
    starved_jobs      BIGINT NOT NULL,
    starved_gpu_hours DOUBLE,
    verdict_gpu_hours DOUBLE,
    over_jobs         BIGINT NOT NULL,
    over_gpu_hours    DOUBLE,
    idle_core_hours   DOUBLE
)
