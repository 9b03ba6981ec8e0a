-- The first schema of advisor. Every TIMESTAMP is UTC. Later changes go in new numbered files.
-- Migrations are numbered in one line (the next file takes the next number) and hold base
-- data only: derived tables (the ratio cubes) belong to the module that builds them.

-- One row per load of one source (a file, or one sacct window).
CREATE SEQUENCE ingest_id_seq START 1;
CREATE TABLE ingests (
    ingest_id     BIGINT PRIMARY KEY DEFAULT nextval('ingest_id_seq'),
    source        VARCHAR NOT NULL,          -- file path, or 'sacct:<start>/<end>'
    format        VARCHAR NOT NULL,          -- sacct-text | sacct-json | jobcomp | scontrol-node
    compression   VARCHAR,                   -- gzip | zstd | NULL
    content_hash  VARCHAR,                   -- sha256 of the uncompressed bytes
    cluster       VARCHAR,
    source_tz     VARCHAR NOT NULL DEFAULT 'UTC',
    started_at    TIMESTAMP NOT NULL,
    finished_at   TIMESTAMP,
    rows_read     BIGINT NOT NULL DEFAULT 0, -- allocation records seen (steps folded)
    lines_read    BIGINT NOT NULL DEFAULT 0, -- physical records read, steps included
    inserted      BIGINT NOT NULL DEFAULT 0,
    updated       BIGINT NOT NULL DEFAULT 0,
    unchanged     BIGINT NOT NULL DEFAULT 0,
    rejected      BIGINT NOT NULL DEFAULT 0,
    missing_fields VARCHAR[],                -- fields absent from the source
    disabled_analyses VARCHAR[],             -- what those missing fields switch off
    status        VARCHAR NOT NULL DEFAULT 'running'  -- running | done | failed
);

-- One row per allocation: a job, an array task, or a het-job component (steps folded in).
-- Key: (cluster, job_id_raw, submit) survives job-id reuse and requeues.
CREATE TABLE jobs (
    cluster        VARCHAR NOT NULL,
    job_id_raw     BIGINT NOT NULL,          -- JobIDRaw: unique per array task / het component
    submit         TIMESTAMP NOT NULL,       -- 1970-01-01 when the source has none
    job_id         VARCHAR NOT NULL,         -- as sacct displays it: 123, 123_4, 123+1
    array_job_id   BIGINT,
    array_task_id  BIGINT,
    het_job_id     BIGINT,
    het_job_offset INTEGER,
    "user"         VARCHAR,
    uid            BIGINT,
    "group"        VARCHAR,
    account        VARCHAR,
    "partition"    VARCHAR,
    qos            VARCHAR,
    job_name       VARCHAR,
    state          VARCHAR,                  -- first word: COMPLETED, CANCELLED, FAILED, ...
    state_raw      VARCHAR,                  -- as given: 'CANCELLED by 1234'
    exit_code      VARCHAR,
    eligible       TIMESTAMP,
    start          TIMESTAMP,                -- NULL when never started (Unknown/None)
    "end"          TIMESTAMP,                -- NULL while running
    elapsed_s      BIGINT,
    timelimit_s    BIGINT,                   -- NULL for UNLIMITED
    nnodes         INTEGER,
    cpus           INTEGER,                  -- allocated CPUs (AllocTRES cpu / NCPUS)
    gpus           INTEGER NOT NULL DEFAULT 0, -- allocated GPUs, all types
    gpu_type       VARCHAR,                  -- canonical family (H100, A100, ...); raw name if unknown
    gpu_type_raw   VARCHAR,                  -- as the site names it (h100_80gb)
    gpu_types      VARCHAR,                  -- several types in one job: 'H100:2,A100:1'
    mem_mb         BIGINT,
    billing        DOUBLE,
    node_list      VARCHAR,
    req_cpus       INTEGER,
    req_gpus       INTEGER,
    req_mem_mb     BIGINT,
    alloc_tres     VARCHAR,
    req_tres       VARCHAR,
    submit_line    VARCHAR,
    work_dir       VARCHAR,
    is_interactive BOOLEAN,                  -- salloc / srun --pty; NULL when unknowable
    interactive_evidence VARCHAR,            -- what decided it: submit_line | step | job_name
    exclusive      BOOLEAN,
    ingest_id      BIGINT,
    updated_at     TIMESTAMP,
    PRIMARY KEY (cluster, job_id_raw, submit)
);

-- Every record that could not be loaded, with where it was and why.
CREATE TABLE rejects (
    ingest_id BIGINT NOT NULL,
    source    VARCHAR NOT NULL,
    line_no   BIGINT,                        -- 1-based physical line (or JSON job index)
    field     VARCHAR,
    raw       VARCHAR,                       -- the line, non-UTF-8 bytes replaced
    reason    VARCHAR NOT NULL
);

-- Node inventory from `scontrol show node -o`.
CREATE TABLE nodes (
    cluster          VARCHAR NOT NULL,
    node_name        VARCHAR NOT NULL,
    cpus             INTEGER,                -- CPUTot (logical CPUs)
    sockets          INTEGER,
    cores_per_socket INTEGER,
    threads_per_core INTEGER,
    real_memory_mb   BIGINT,
    gpus             INTEGER NOT NULL DEFAULT 0,
    gpu_type         VARCHAR,                -- canonical family
    gpu_type_raw     VARCHAR,
    gres             VARCHAR,
    partitions       VARCHAR[],
    features         VARCHAR,
    state            VARCHAR,
    snapshot_at      TIMESTAMP NOT NULL,
    ingest_id        BIGINT,
    PRIMARY KEY (cluster, node_name)
);

-- Benchmark runs that `advisor bench` launched (one per engine start x core count x repeat x load).
CREATE TABLE bench_runs (
    run_id            VARCHAR PRIMARY KEY,
    started_at        TIMESTAMP,
    finished_at       TIMESTAMP,
    status            VARCHAR NOT NULL,      -- ok | crashed | hung | start-timeout | failed
    engine            VARCHAR NOT NULL,
    engine_version    VARCHAR,
    model             VARCHAR,
    model_params_b    DOUBLE,
    platform          VARCHAR,               -- canonical GPU family: H100, H200, B200, RTX PRO 6000 Blackwell, CPU
    gpu_name          VARCHAR,
    cpu_model         VARCHAR,
    gpus              INTEGER,
    tp                INTEGER,
    cores             INTEGER,
    cores_per_gpu     DOUBLE,
    core_list         VARCHAR,
    workload          VARCHAR,               -- unique | shared-prefix
    attacker_rps      DOUBLE,
    attacker_tokens_min INTEGER,
    attacker_tokens_max INTEGER,
    victim_rps        DOUBLE,
    duration_s        DOUBLE,
    repeat            INTEGER,
    timeout_s         DOUBLE,
    victim_ttft_p50_ms DOUBLE,
    victim_ttft_p90_ms DOUBLE,
    attacker_ttft_p50_ms DOUBLE,
    requests_ok       INTEGER,
    requests_failed   INTEGER,
    requests_timed_out INTEGER,
    engine_cpu_percent DOUBLE,
    gpu_util_percent  DOUBLE,
    tokenize_share    DOUBLE,                -- tokenization's share of victim TTFT
    env               JSON,                  -- TOKENIZERS_PARALLELISM, OMP_NUM_THREADS, ...
    metrics_before    JSON,
    metrics_after     JSON,
    extra             JSON,
    source_file       VARCHAR
);

CREATE TABLE bench_requests (
    run_id        VARCHAR NOT NULL,
    request_no    INTEGER NOT NULL,
    kind          VARCHAR NOT NULL,          -- attacker | victim | warmup
    prompt_tokens INTEGER,
    output_tokens INTEGER,
    sent_s        DOUBLE,                    -- seconds since the run's start (monotonic clock)
    first_token_s DOUBLE,
    finished_s    DOUBLE,
    ttft_ms       DOUBLE,
    e2e_ms        DOUBLE,
    status        VARCHAR NOT NULL,          -- ok | error | timeout
    error         VARCHAR,
    PRIMARY KEY (run_id, request_no)
);

-- Points the TTFT model is fitted on: the research's published figures and bench results,
-- one schema for both (data/calibration/*.csv has the same columns).
CREATE TABLE calibration (
    point_id       VARCHAR PRIMARY KEY,
    source         VARCHAR NOT NULL,         -- 'paper:arXiv 2603.22774' or 'bench:<run_id>'
    source_ref     VARCHAR,                  -- table / figure / run file
    platform       VARCHAR,                  -- H100 | H200 | B200 | RTX PRO 6000 Blackwell
    engine         VARCHAR,
    engine_version VARCHAR,
    model          VARCHAR,
    model_params_b DOUBLE,
    gpus           INTEGER,
    workload       VARCHAR,
    load_rps       DOUBLE,
    prompt_tokens  INTEGER,
    cores          INTEGER,
    cores_per_gpu  DOUBLE,
    metric         VARCHAR NOT NULL,         -- ttft_ms | task_time_s | speedup | tokenize_share | dequeue_ms | timeout
    value          DOUBLE,
    unit           VARCHAR,
    measured_on    DATE,
    notes          VARCHAR
);
