-- ratio_cube_state: the fingerprint of the jobs the cubes were built from (no row: stale).
{{create}} ratio_cube_state (
    jobs_rows     BIGINT NOT NULL,
    ingest_id     BIGINT NOT NULL,
    finished_at   TIMESTAMP,
    rules_version INTEGER,
    built_at      TIMESTAMP NOT NULL
)
