-- nodes/insert_ingest: open the ingests row of one node-inventory load.
INSERT INTO ingests (source, format, content_hash, cluster, started_at, lines_read)
VALUES (?, 'scontrol-node', ?, ?, ?, ?)
RETURNING ingest_id
