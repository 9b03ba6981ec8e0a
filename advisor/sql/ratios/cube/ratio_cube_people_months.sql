-- ratio_cube_people_months: ratio_cube_people per month, state and interactive label, stored in
-- month order so that a time range reads only its months; built on first use.
{{create}} ratio_cube_people_months (
    pid             INTEGER NOT NULL,
    month           DATE,
    state           VARCHAR,
    interactive     VARCHAR,
    gpus            INTEGER,
    cpus            INTEGER,
    excluded_reason VARCHAR,
    jobs            BIGINT NOT NULL,
    gpu_seconds     BIGINT NOT NULL
)
