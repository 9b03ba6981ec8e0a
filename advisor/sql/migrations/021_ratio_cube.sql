-- A pre-aggregated summary of jobs for fast ratio reports (advisor.ratios): one row per
-- distinct (cluster, GPU type, partition, month, state, GPUs, CPUs, interactive, exclusion
-- reason) with its job count and GPU-seconds. Derived data: rebuilt whenever the fingerprint in
-- ratio_cube_state no longer matches jobs/ingests, so it is never read stale.
CREATE TABLE ratio_cube (
    cluster         VARCHAR,
    gpu_type        VARCHAR,
    "partition"     VARCHAR,
    month           DATE,
    state           VARCHAR,
    gpus            INTEGER,
    cpus            INTEGER,
    interactive     VARCHAR,
    excluded_reason VARCHAR,
    n               BIGINT NOT NULL,
    w               HUGEINT NOT NULL
);
CREATE TABLE ratio_cube_state (
    jobs_rows   BIGINT NOT NULL,
    ingest_id   BIGINT NOT NULL,
    finished_at TIMESTAMP,
    built_at    TIMESTAMP NOT NULL
);
