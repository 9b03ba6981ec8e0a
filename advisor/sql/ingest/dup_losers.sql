-- The allocation lines of `parsed` that lose to another line of their key (dupkeys, see
-- superseded.sql; the order is losers.sql's), each with the line kept and whether it says the
-- same as the kept one. The same placeholder compares the two rows' parsed values (keys.py
-- lists every column but the line's own bookkeeping). A line that loses to a repaired record
-- while it is not one is the first half of that record (stages.Loaded.tails): not listed.
-- {{dups}}: a predicate on `parsed p` that holds for exactly those lines: their rowids as a
-- literal list (dup_rowids.sql; DuckDB then reads those rows alone, not every column of every
-- row), or the semi join on dupkeys for very many.
WITH ranked AS (
    SELECT p.rowid AS rid, p.*,
        row_number() OVER (PARTITION BY p.cluster, p.job_id_raw, p.submit
            ORDER BY p.repaired DESC, p."end" DESC NULLS LAST, p."start" DESC NULLS LAST,
                     p.state_raw DESC NULLS LAST) AS rn
    FROM parsed p
    WHERE {{dups}}
)
SELECT l.line_no, w.line_no AS kept_line, l.job_id, l.state_raw, l."start", l."end",
    ({{same}}) AS same
FROM ranked l
JOIN ranked w ON w.rn = 1 AND w.cluster = l.cluster AND w.job_id_raw = l.job_id_raw
    AND w.submit = l.submit
WHERE l.rn > 1 AND NOT (w.repaired AND NOT l.repaired)
ORDER BY l.rid
