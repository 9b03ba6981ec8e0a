-- A bulk load's write (bulk.py): the rows <rows> (fold.sql over the file's allocation
-- lines, or over its repaired ones), none of whose keys is stored. Returns the count.
INSERT INTO jobs BY NAME
SELECT *, $ingest_id AS ingest_id, timezone('UTC', now()) AS updated_at
FROM ({{rows}})
