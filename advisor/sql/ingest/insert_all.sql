-- Insert every allocation (no stored row can share a key: see overlap.sql). The stage
-- placeholder is the rows: the view `stage`, or for a bulk load fold.sql over the file
-- (fold.sql: the one definition of a row). Parameter: $ingest_id. Returns the count.
INSERT INTO jobs BY NAME
SELECT *, $ingest_id AS ingest_id, timezone('UTC', now()) AS updated_at
FROM {{stage}}
