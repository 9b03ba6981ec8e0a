-- Whether rows that a bulk load inserted (ingest $ingest_id) share a key with rows stored
-- before it. When they do the load is rolled back and runs again as an upsert (pipeline.py).
-- The cheap range test first: stored rows of the same clusters within the new submit range.
WITH n AS (
    SELECT list(DISTINCT cluster) AS clusters, min(submit) AS lo, max(submit) AS hi
    FROM jobs WHERE ingest_id = $ingest_id
), near AS (
    SELECT o.cluster, o.job_id_raw, o.submit
    FROM jobs o, n
    WHERE o.ingest_id IS DISTINCT FROM $ingest_id
      AND list_contains(n.clusters, o.cluster) AND o.submit BETWEEN n.lo AND n.hi
)
SELECT EXISTS (
    SELECT 1 FROM near
    JOIN jobs j ON j.cluster = near.cluster AND j.job_id_raw = near.job_id_raw
        AND j.submit = near.submit
    WHERE j.ingest_id = $ingest_id
)
