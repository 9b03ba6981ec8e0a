-- Insert every allocation (no stored row can share a key: see overlap.sql). The columns are
-- those of the view `stage` (fold.sql: the one definition of a row). Parameter: $ingest_id.
-- Returns the count.
INSERT INTO jobs BY NAME
SELECT *, $ingest_id AS ingest_id, timezone('UTC', now()) AS updated_at
FROM stage
