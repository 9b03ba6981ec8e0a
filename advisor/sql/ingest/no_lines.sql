-- A text source's columns (<src>) without its lines: a file with no step lines.
SELECT * FROM ({{src}}) AS s LIMIT 0
