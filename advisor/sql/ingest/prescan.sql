-- The first, light pass of a bulk load (advisor/ingest/bulk.py) over a sacct text file: what it
-- holds, without parsing it. The src placeholder is the file (text.csv_src_sql, a few columns).
-- A record is a step as parse.sql tells it (macros.sql: ing_is_step). One GROUP BY over the few
-- distinct (step?, cluster, typed TRES, GRES) values, then one row: DISTINCT aggregates over
-- the millions of records themselves take three times as long.
-- Parameters: $cluster (when the file has no Cluster).
WITH g AS (
    SELECT ing_is_step(jobid, jobidraw) AS is_step,
        coalesce(nullif(cluster, ''), $cluster) AS cl,
        CASE WHEN contains(alloctres, 'gres/gpu:') THEN alloctres END AS typed,
        CASE WHEN contains(allocgres, 'gpu') THEN allocgres END AS gres,
        count(*) AS n, min(submit) AS lo, max(submit) AS hi
    FROM ({{src}}) AS src
    GROUP BY ALL
)
SELECT
    coalesce(sum(n), 0) AS records,
    coalesce(sum(n) FILTER (WHERE is_step), 0) AS steps,
    list(DISTINCT cl) FILTER (WHERE NOT is_step AND cl IS NOT NULL) AS clusters,
    min(lo) FILTER (WHERE NOT is_step) AS first_submit,
    max(hi) FILTER (WHERE NOT is_step) AS last_submit,
    -- the GPU type names come from these few distinct strings (bulk.py parses them)
    list(DISTINCT typed) FILTER (WHERE typed IS NOT NULL) AS typed_tres,
    list(DISTINCT gres) FILTER (WHERE gres IS NOT NULL) AS alloc_gres
FROM g
