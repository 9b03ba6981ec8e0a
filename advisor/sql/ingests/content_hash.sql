-- The sha256 of the source's uncompressed bytes, known once the load has read them all.
UPDATE ingests SET content_hash = $content_hash WHERE ingest_id = $ingest_id
