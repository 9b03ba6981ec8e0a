-- The latest ingest id so far (0 before the first): the ingests after it are a batch's own
-- (ingest/pressure_fold's $since).
SELECT coalesce(max(ingest_id), 0) FROM ingests
