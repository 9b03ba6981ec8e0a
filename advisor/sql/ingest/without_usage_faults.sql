-- The parser's rows (<parse>) but those with a usage fault (parse.sql: usage_fault): the bulk
-- insert leaves them to alloc_usage_faults.sql, after the read that finds them for `rejects`.
SELECT * FROM ({{parse}}) AS p WHERE usage_fault IS NULL
