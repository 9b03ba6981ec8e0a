-- The per-month account/user cube (ratio_cube_people_months, migration 024) is built on first
-- use instead of in every cube rebuild (advisor.ratios.refresh_people_months): building it
-- tripled the rebuild each ingest pays at its end. It has its own fingerprint, the columns of
-- ratio_cube_state; no row means stale.
CREATE TABLE ratio_cube_people_months_state (
    jobs_rows     BIGINT NOT NULL,
    ingest_id     BIGINT NOT NULL,
    finished_at   TIMESTAMP,
    rules_version INTEGER,
    built_at      TIMESTAMP NOT NULL
);
DELETE FROM ratio_cube_people_months;
