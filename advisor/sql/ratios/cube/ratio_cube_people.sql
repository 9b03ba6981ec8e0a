-- ratio_cube_people: per (pid, GPUs, CPUs, exclusion reason), over all time, the jobs and their
-- GPU-seconds (BIGINT: DuckDB decodes a compressed HUGEINT column far slower).
{{create}} ratio_cube_people (
    pid             INTEGER NOT NULL,
    gpus            INTEGER,
    cpus            INTEGER,
    excluded_reason VARCHAR,
    jobs            BIGINT NOT NULL,
    gpu_seconds     BIGINT NOT NULL
)
