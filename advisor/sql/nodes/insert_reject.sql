-- nodes/insert_reject: a line of scontrol output that could not be loaded, and why.
INSERT INTO rejects (ingest_id, source, line_no, field, raw, reason) VALUES (?, ?, ?, ?, ?, ?)
