SELECT count(*) FROM jobs WHERE ingest_id = $ingest_id
