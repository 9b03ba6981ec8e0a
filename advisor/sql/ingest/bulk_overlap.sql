-- Whether a key of the rows a bulk load inserted (ingest $ingest_id) occurs twice in `jobs`:
-- the file holds it twice, or a row stored before shares it. Either way the load is rolled
-- back and runs again the careful way (careful.py), which folds a file's duplicates and
-- upserts. `jobs` has no key constraint (migration 011): this check keeps the key unique.
-- Only rows of the same clusters within the new submit range can share a key.
WITH n AS (
    SELECT list(DISTINCT cluster) AS clusters, min(submit) AS lo, max(submit) AS hi
    FROM jobs WHERE ingest_id = $ingest_id
)
SELECT EXISTS (
    SELECT 1
    FROM jobs j, n
    WHERE list_contains(n.clusters, j.cluster) AND j.submit BETWEEN n.lo AND n.hi
    GROUP BY j.cluster, j.job_id_raw, j.submit
    HAVING count(*) > 1
)
