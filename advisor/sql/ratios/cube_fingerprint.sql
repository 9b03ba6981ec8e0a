-- ratios/cube_fingerprint: what ratio_cube was built from: the jobs row count and the latest
-- finished ingest (id, finish time). A load, an update through ingest, or a new row changes it.
SELECT
    (SELECT count(*) FROM jobs) AS jobs_rows,
    (SELECT coalesce(max(ingest_id), 0) FROM ingests WHERE format <> 'scontrol-node') AS ingest_id,
    (SELECT max(finished_at) FROM ingests WHERE format <> 'scontrol-node') AS finished_at
