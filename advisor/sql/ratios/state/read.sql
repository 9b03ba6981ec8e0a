-- ratios/state/read: the fingerprint a derived table was built from ({{table}}: a *_state table).
SELECT jobs_rows, ingest_id, finished_at, rules_version FROM {{table}} LIMIT 1
