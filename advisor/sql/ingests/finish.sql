-- A load's ingests row closed with its counts.
UPDATE ingests
SET finished_at = $finished_at, rows_read = $rows_read, lines_read = $lines_read,
    inserted = $inserted, updated = $updated, unchanged = $unchanged, rejected = $rejected,
    missing_fields = $missing_fields, disabled_analyses = $disabled_analyses, status = 'done'
WHERE ingest_id = $ingest_id
