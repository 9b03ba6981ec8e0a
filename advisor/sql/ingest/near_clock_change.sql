-- Jobs of ingest $ingest_id with a time (UTC, as stored) inside a window around one of the
-- source zone's clock changes ($windows: a list of {lo, hi}; ingest/clockchange.py): their local
-- text was an hour that repeats (ambiguous) or that the clocks skip (no such time).
SELECT count(*)
FROM jobs j
WHERE j.ingest_id = $ingest_id
  AND EXISTS (
      SELECT 1 FROM (SELECT unnest($windows, recursive := true)) w
      WHERE (j.submit >= w.lo AND j.submit < w.hi)
         OR (j.eligible >= w.lo AND j.eligible < w.hi)
         OR (j."start" >= w.lo AND j."start" < w.hi)
         OR (j."end" >= w.lo AND j."end" < w.hi))
