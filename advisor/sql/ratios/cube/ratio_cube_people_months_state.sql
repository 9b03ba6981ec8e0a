-- ratio_cube_people_months_state: the fingerprint of the per-month people cubes, built on
-- first use rather than by every rebuild (no row: stale).
{{create}} ratio_cube_people_months_state (
    jobs_rows     BIGINT NOT NULL,
    ingest_id     BIGINT NOT NULL,
    finished_at   TIMESTAMP,
    rules_version INTEGER,
    built_at      TIMESTAMP NOT NULL
)
