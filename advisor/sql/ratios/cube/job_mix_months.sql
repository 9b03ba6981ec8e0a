-- job_mix_months: the GPU jobs that ran (elapsed > 0, known CPUs and GPUs) per (cluster,
-- partition, GPU family, CPUs, GPUs, month of start, GRES spelling), what recommend reads
-- instead of scanning jobs for month-aligned windows.
{{create}} job_mix_months (
    cluster     VARCHAR,
    "partition" VARCHAR,
    gpu_type    VARCHAR,
    cpus        INTEGER,
    gpus        INTEGER,
    month       DATE,
    gres_type   VARCHAR,
    jobs        BIGINT NOT NULL,
    elapsed_s   HUGEINT NOT NULL,
    gpu_seconds HUGEINT NOT NULL,
    first_start TIMESTAMP,
    last_end    TIMESTAMP
)
