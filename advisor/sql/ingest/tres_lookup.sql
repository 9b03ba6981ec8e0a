-- The TRES strings of a file's allocation records (temp prescan_groups), read once each into
-- temp ing_tres_lookup for parse.sql: the $max most frequent (a bound on the table's size for
-- a file with unusually many distinct strings; parse.sql reads the others itself), and ''
-- (a record without the field).
CREATE OR REPLACE TEMP TABLE ing_tres_lookup AS
SELECT s, ing_tres(s) AS t
FROM (
    SELECT s FROM (
        SELECT coalesce(alloctres, '') AS s, n FROM prescan_groups WHERE NOT is_step
        UNION ALL
        SELECT coalesce(reqtres, ''), n FROM prescan_groups WHERE NOT is_step
        UNION ALL
        SELECT '', 0
    )
    GROUP BY s
    ORDER BY sum(n) DESC, s
    LIMIT $max
)
