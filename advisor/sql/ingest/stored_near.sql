-- Whether `jobs` holds rows of these clusters submitted between two times (a bulk load is
-- tried only when none are near the file's submit times; bulk_overlap.sql then checks exactly).
-- Parameters: $clusters (a list), $first, $last (timestamps, UTC).
SELECT EXISTS (
    SELECT 1 FROM jobs
    WHERE list_contains($clusters, cluster) AND submit BETWEEN $first AND $last
)
