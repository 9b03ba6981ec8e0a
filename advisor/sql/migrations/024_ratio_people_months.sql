-- The account/user cube, rebuilt for speed and extended to months and states
-- (advisor.ratios; derived data, rebuilt under ratio_cube_state's fingerprint):
-- - ratio_people: one row per distinct (cluster, GPU type, partition, account, user), numbered
--   (pid), so that the cubes below group and filter on one integer instead of five strings;
-- - ratio_cube_people (replaces migration 022's): per (pid, GPUs, CPUs, exclusion reason) the
--   job count and GPU-seconds, over all time;
-- - ratio_cube_people_months: the same per month (of the start time, as ratio_cube), state
--   and interactive, stored in month order so that a time range reads only its months.
-- Excluded jobs keep no CPU count (no ratio is taken of them), which folds them into few rows.
-- GPU-seconds are BIGINT (ample: 2^63 s), not HUGEINT: DuckDB decodes a compressed HUGEINT
-- column about 20x slower, which was most of the time of a scan of these cubes.
DROP TABLE IF EXISTS ratio_cube_people;
CREATE TABLE ratio_people (
    pid             INTEGER NOT NULL,
    cluster         VARCHAR,
    gpu_type        VARCHAR,
    "partition"     VARCHAR,
    account         VARCHAR,
    "user"          VARCHAR
);
CREATE TABLE ratio_cube_people (
    pid             INTEGER NOT NULL,
    gpus            INTEGER,
    cpus            INTEGER,
    excluded_reason VARCHAR,
    n               BIGINT NOT NULL,
    w               BIGINT NOT NULL
);
CREATE TABLE ratio_cube_people_months (
    pid             INTEGER NOT NULL,
    month           DATE,
    state           VARCHAR,
    interactive     VARCHAR,
    gpus            INTEGER,
    cpus            INTEGER,
    excluded_reason VARCHAR,
    n               BIGINT NOT NULL,
    w               BIGINT NOT NULL
);
-- a cube built before this migration is incomplete: make it read stale
DELETE FROM ratio_cube_state;
