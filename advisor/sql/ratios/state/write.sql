-- ratios/state/write: record the fingerprint a derived table was just built from; the table
-- ({{table}}, a *_state table) holds one row.
DELETE FROM {{table}};
INSERT INTO {{table}} (jobs_rows, ingest_id, finished_at, rules_version, built_at)
VALUES ($jobs_rows, $ingest_id, $finished_at, $rules_version, now() AT TIME ZONE 'UTC')
