-- ratio_cube_people_month_ratios: ratio_cube_people_months summed over states, labels and GPU
-- counts, per (pid, month, cores per GPU): the smaller cube month-range summaries read.
{{create}} ratio_cube_people_month_ratios (
    pid             INTEGER NOT NULL,
    month           DATE,
    cores_per_gpu   DOUBLE,
    excluded_reason VARCHAR,
    jobs            BIGINT NOT NULL,
    gpu_seconds     BIGINT NOT NULL
)
