-- The allocation lines of a file for a bulk load (bulk.py): the parse placeholder is parse.sql
-- over the file; only allocation lines that parsed go to `jobs` (the others are found later).
    SELECT * FROM ({{parse}}) AS p WHERE step IS NULL AND bad_field IS NULL
