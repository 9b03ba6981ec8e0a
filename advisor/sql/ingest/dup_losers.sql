-- The allocation lines of `parsed` that lose to another line of their key (dupkeys, see
-- superseded.sql; the order is losers.sql's), each with the line kept and whether it says the
-- same as the kept one. The same placeholder compares the two rows' parsed values (keys.py
-- lists every column but the line's own bookkeeping). A line that loses to a repaired record
-- while it is not one is the first half of that record (stages.Loaded.tails): not listed.
WITH ranked AS (
    SELECT p.rowid AS rid, p.*,
        row_number() OVER (PARTITION BY p.cluster, p.job_id_raw, p.submit
            ORDER BY p.repaired DESC, p."end" DESC NULLS LAST, p."start" DESC NULLS LAST,
                     p.state_raw DESC NULLS LAST) AS rn
    FROM parsed p SEMI JOIN dupkeys d
        ON d.cluster = p.cluster AND d.job_id_raw = p.job_id_raw AND d.submit = p.submit
    WHERE p.step IS NULL AND p.bad_field IS NULL
)
SELECT l.line_no, w.line_no AS kept_line, l.job_id, l.state_raw, l."start", l."end",
    ({{same}}) AS same
FROM ranked l
JOIN ranked w ON w.rn = 1 AND w.cluster = l.cluster AND w.job_id_raw = l.job_id_raw
    AND w.submit = l.submit
WHERE l.rn > 1 AND NOT (w.repaired AND NOT l.repaired)
ORDER BY l.rid
