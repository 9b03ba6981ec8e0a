-- Insert every row of the view `stage`: no stored row can share a key (overlap.sql).
-- Returns the count.
INSERT INTO jobs BY NAME
SELECT *, $ingest_id AS ingest_id, timezone('UTC', now()) AS updated_at
FROM stage
