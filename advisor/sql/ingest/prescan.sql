-- The first, light pass of a bulk load (advisor/ingest/bulk.py) over a sacct text file: what it
-- holds, without parsing it. The src placeholder is the file (text.csv_src_sql; its unreadable
-- lines land in the reject tables here). A record is a step when its job id has a dot, as in
-- parse.sql. Parameters: $cluster (when the file has no Cluster). One row.
WITH s AS (
    SELECT contains(coalesce(nullif(jobid, ''), jobidraw), '.') AS is_step,
        coalesce(nullif(cluster, ''), $cluster) AS cl,
        submit, alloctres, allocgres
    FROM ({{src}}) AS src
)
SELECT
    count(*) AS records,
    count(*) FILTER (WHERE is_step) AS steps,
    list(DISTINCT cl) FILTER (WHERE NOT is_step AND cl IS NOT NULL) AS clusters,
    min(submit) FILTER (WHERE NOT is_step) AS first_submit,
    max(submit) FILTER (WHERE NOT is_step) AS last_submit,
    -- the GPU type names come from these few distinct strings (bulk.py parses them)
    list(DISTINCT alloctres) FILTER (WHERE contains(alloctres, 'gres/gpu:')) AS typed_tres,
    list(DISTINCT allocgres) FILTER (WHERE contains(allocgres, 'gpu')) AS alloc_gres
FROM s
