-- The first and last time (UTC, as stored) of the jobs of ingest $ingest_id.
SELECT least(min(submit), min(eligible), min("start")),
       greatest(max(submit), max("start"), max("end"))
FROM jobs
WHERE ingest_id = $ingest_id
