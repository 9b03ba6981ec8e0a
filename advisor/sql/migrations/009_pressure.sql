-- CPU pressure (Linux PSI) of jobs' cgroups (issue 37): the collector's records as loaded, and
-- on each job the sums folded from them (ingest/pressure_fold.sql). The shares (stall seconds
-- over the seconds the records cover) are derived on read (usage/facts.sql), never stored.
CREATE TABLE pressure_records (
    cluster VARCHAR NOT NULL,      -- '' where the collector was given no cluster name
    job_id VARCHAR NOT NULL,       -- the job's own id (an array task's raw id): job_<id>
    step VARCHAR NOT NULL,         -- '' for the job's cgroup; else Slurm's step (batch, 0, ...)
    host VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,  -- UTC
    status VARCHAR NOT NULL,       -- ok | unavailable (no cgroup v2 or no PSI on the node)
    some_s DOUBLE,                 -- cpu.pressure some total: seconds since the cgroup was made
    full_s DOUBLE,                 -- cpu.pressure full total
    usage_s DOUBLE,                -- cpu.stat usage_usec, seconds
    throttled_s DOUBLE,            -- cpu.stat throttled_usec (a CPU quota), seconds
    nr_throttled BIGINT,
    cpus VARCHAR,                  -- cpuset.cpus.effective
    cpu_count INTEGER,
    ingest_id BIGINT,
    PRIMARY KEY (cluster, job_id, step, host, collected_at)
);
ALTER TABLE jobs ADD COLUMN psi_some_s DOUBLE;     -- summed over the job's hosts, latest record
ALTER TABLE jobs ADD COLUMN psi_full_s DOUBLE;
ALTER TABLE jobs ADD COLUMN psi_covered_s DOUBLE;  -- seconds of the job those totals cover
ALTER TABLE jobs ADD COLUMN psi_hosts INTEGER;     -- hosts with a record
ALTER TABLE jobs ADD COLUMN psi_status VARCHAR;    -- measured | unavailable | NULL (no record)
