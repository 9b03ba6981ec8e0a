-- A source refused whole: its row closed as failed, with its one reject.
UPDATE ingests SET finished_at = $finished_at, rejected = 1, status = 'failed'
WHERE ingest_id = $ingest_id
