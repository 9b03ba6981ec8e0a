-- The first, light pass of a bulk load (advisor/ingest/bulk.py) over a sacct text file: what it
-- holds, without parsing it, as temp prescan_groups (read by prescan_summary.sql and
-- tres_lookup.sql). The src placeholder is the file (text.csv_src_sql, a few columns). A
-- record is a step as parse.sql tells it (macros.sql: ing_is_step). One GROUP BY over the few
-- distinct (step?, cluster, TRES, GRES) values: DISTINCT aggregates over the millions of
-- records themselves take three times as long. Steps keep no TRES strings (they vary, and the
-- bulk insert never parses them).
-- Parameters: $cluster (when the file has no Cluster).
CREATE OR REPLACE TEMP TABLE prescan_groups AS
SELECT is_step, cl, typed, gres,
    CASE WHEN NOT is_step THEN alloctres END AS alloctres,
    CASE WHEN NOT is_step THEN reqtres END AS reqtres,
    count(*) AS n, min(submit) AS lo, max(submit) AS hi
FROM (
    SELECT ing_is_step(jobid, jobidraw) AS is_step,
        coalesce(nullif(cluster, ''), $cluster) AS cl,
        CASE WHEN contains(alloctres, 'gres/gpu:') THEN alloctres END AS typed,
        CASE WHEN contains(allocgres, 'gpu') THEN allocgres END AS gres,
        alloctres, reqtres, submit
    FROM ({{src}}) AS src
)
GROUP BY ALL
