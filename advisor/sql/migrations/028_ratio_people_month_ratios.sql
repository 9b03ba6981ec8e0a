-- The per-month people cube summed over states, interactive labels and GPU counts: per (pid,
-- month, ratio, exclusion reason) the job count and GPU-seconds (advisor.ratios; derived data).
-- Account/user summaries by month or over month ranges without state, interactive or GPU-count
-- keys and filters (a monthly report's) read it: 0.74M rows where ratio_cube_people_months has
-- 2.7M for the 4.65M-job benchmark; with the same code a summary by user and month took 144 ms
-- from that cube and 84-98 ms from this one, by account and month 53 and 22 ms. Built with
-- ratio_cube_people_months, on first use, under its fingerprint
-- (ratio_cube_people_months_state): cleared here so that a cube built before reads stale.
CREATE TABLE ratio_cube_people_month_ratios (
    pid             INTEGER NOT NULL,
    month           DATE,
    v               DOUBLE,
    excluded_reason VARCHAR,
    n               BIGINT NOT NULL,
    w               BIGINT NOT NULL
);
DELETE FROM ratio_cube_people_months_state;
