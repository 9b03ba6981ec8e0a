-- Whether `jobs` holds rows of these clusters submitted within a day of a file's submit range
-- (a bulk load is tried only when none are; bulk_overlap.sql then checks exactly). NULL when
-- the range's texts are not times. The day is added here, not in Python: a submit in year
-- 9999 or 0001 (rejected later by the parser) has no Python datetime a day beyond it.
-- Parameters: $clusters (a list), $first, $last (submit texts), $tz (their zone).
SELECT CASE WHEN lo IS NOT NULL AND hi IS NOT NULL THEN EXISTS (
    SELECT 1 FROM jobs
    WHERE list_contains($clusters, cluster)
      AND submit BETWEEN lo - INTERVAL 1 DAY AND hi + INTERVAL 1 DAY
) END
FROM (SELECT ing_ts($first, $tz) AS lo, ing_ts($last, $tz) AS hi)
