-- A sacct window loaded (live.py): a rerun skips it.
INSERT OR REPLACE INTO ingest_windows VALUES (?, ?, ?, ?, timezone('UTC', now()))
