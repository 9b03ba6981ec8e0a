-- The TRES strings of a file's records, read once each into temp ing_tres_lookup for parse.sql:
-- the $max most frequent (a bound on the table's size for a file with unusually
-- many distinct strings; parse.sql reads the others itself), and '' (a record without the
-- field). The groups placeholder is a relation of (is_step, alloctres, reqtres, n): the bulk
-- load's prescan_groups (every record of the file), or the first records of a file the
-- careful path reads (advisor/ingest/careful.py); it is read once, both strings
-- of a row together (written twice, the careful path's sample was read from the file twice).
-- Steps' strings too: the careful path parses every step line, and a step's AllocTRES lacks
-- its allocation's billing key; the prescan keeps none (its steps' strings are NULL). `n`: how
-- often the groups held the string (tres_unseen.sql).
CREATE OR REPLACE TEMP TABLE ing_tres_lookup AS
SELECT s, ing_tres(s) AS t, n
FROM (
    SELECT s, CAST(sum(n) AS BIGINT) AS n FROM (
        SELECT unnest([coalesce(alloctres, ''), coalesce(reqtres, '')]) AS s, n
        FROM {{groups}} AS g
        UNION ALL
        SELECT '', 0
    )
    GROUP BY s
    ORDER BY sum(n) DESC, s
    LIMIT $max
)
