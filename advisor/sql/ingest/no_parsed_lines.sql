-- No line of `parsed`, with its columns (parsed_steps.sql for the careful way).
SELECT * FROM parsed LIMIT 0
