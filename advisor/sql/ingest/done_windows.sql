-- The sacct windows already loaded for a set of clusters (live.py).
SELECT window_start, window_end FROM ingest_windows WHERE clusters = ?
