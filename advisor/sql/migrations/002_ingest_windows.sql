-- Windows of `advisor ingest --sacct` already loaded, so an interrupted run resumes where it
-- stopped. One row per (clusters asked for, window); times UTC.
CREATE TABLE ingest_windows (
    clusters     VARCHAR NOT NULL,           -- the -M argument, '' for the local cluster
    window_start TIMESTAMP NOT NULL,
    window_end   TIMESTAMP NOT NULL,
    ingest_id    BIGINT,
    finished_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (clusters, window_start, window_end)
);
