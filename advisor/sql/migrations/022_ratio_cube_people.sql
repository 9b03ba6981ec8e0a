-- The companion of ratio_cube for summaries by or filtered on account and user: one row per
-- distinct (cluster, GPU type, partition, account, user, GPUs, CPUs, exclusion reason), without
-- month, state or interactive (which would make it nearly as large as jobs). Rebuilt together
-- with ratio_cube, under the same fingerprint (ratio_cube_state).
CREATE TABLE ratio_cube_people (
    cluster         VARCHAR,
    gpu_type        VARCHAR,
    "partition"     VARCHAR,
    account         VARCHAR,
    "user"          VARCHAR,
    gpus            INTEGER,
    cpus            INTEGER,
    excluded_reason VARCHAR,
    n               BIGINT NOT NULL,
    w               HUGEINT NOT NULL
);
