-- derived_slices: per slice of jobs (cluster, month of the start, or of the submit for a job
-- never started) the job count and a checksum of the whole rows, as they were when the
-- derived tables were last built; a rebuild compares them with jobs as they are now and
-- rebuilds only the slices that differ (advisor.derived.cube.refresh_ratio_cube).
{{create}} derived_slices (
    cluster  VARCHAR,
    month    DATE,
    jobs     BIGINT NOT NULL,
    checksum HUGEINT NOT NULL
)
