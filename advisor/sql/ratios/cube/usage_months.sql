-- usage_months: the sums behind a usage summary (usage/summary.sql) per (cluster, partition,
-- GPU type, month of start, GPUs, cores-per-GPU bin), with the verdicts of the default usage
-- thresholds (advisor.usage.UsageThresholds()), what usage_summary reads instead of every job
-- (usage/summary_months.sql). A sum over no job of the cell is NULL, as in usage/summary.sql;
-- the median job's efficiency comes from cpu_eff_counts (usage/medians_months.sql).
{{create}} usage_months (
    cluster           VARCHAR,
    "partition"       VARCHAR,
    gpu_type          VARCHAR,
    month             DATE,
    gpu_count         INTEGER,
    cores_per_gpu_bin INTEGER,
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
    idle_core_hours   DOUBLE,
    cpu_eff_counts    MAP(DOUBLE, UBIGINT)  -- jobs with CPU usage by efficiency to the hundredth
)
