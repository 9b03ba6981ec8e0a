-- A committed load that stored nothing usable.
UPDATE ingests SET status = 'failed' WHERE ingest_id = $ingest_id
