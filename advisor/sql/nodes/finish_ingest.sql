-- nodes/finish_ingest: close the ingests row with its counts.
UPDATE ingests
SET rows_read = ?, inserted = ?, updated = ?, rejected = ?, finished_at = ?, status = 'done'
WHERE ingest_id = ?
