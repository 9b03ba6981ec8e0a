-- usage_starved_months: the GPU jobs whose usage reads as starved under the default usage
-- thresholds, per (cluster, partition, GPU type, month of start) and shape (CPUs, GPUs), with
-- their GPU-hours and elapsed seconds summed: usage/starved_mix.sql's rows by month, what the
-- loss in starved jobs reads instead of every job (usage/starved_mix_months.sql).
{{create}} usage_starved_months (
    cluster     VARCHAR,
    "partition" VARCHAR,
    gpu_type    VARCHAR,
    month       DATE,
    cpus        INTEGER,
    gpus        INTEGER,
    jobs        BIGINT NOT NULL,
    gpu_hours   DOUBLE,
    elapsed_s   BIGINT
)
