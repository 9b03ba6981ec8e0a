-- ratio_cube: per distinct (cluster, GPU type, partition, month, state, GPUs, CPUs,
-- interactive label, exclusion reason) of jobs, their count and GPU-seconds.
{{create}} ratio_cube (
    cluster         VARCHAR,
    gpu_type        VARCHAR,
    "partition"     VARCHAR,
    month           DATE,
    state           VARCHAR,
    gpus            INTEGER,
    cpus            INTEGER,
    interactive     VARCHAR,
    excluded_reason VARCHAR,
    jobs            BIGINT NOT NULL,
    gpu_seconds     HUGEINT NOT NULL
)
