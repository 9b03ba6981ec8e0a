-- The ingests row of one load (jobs or a node inventory), opened in its transaction.
INSERT INTO ingests
    (source, format, compression, content_hash, cluster, source_tz, started_at, lines_read)
VALUES
    ($source, $format, $compression, $content_hash, $cluster, $source_tz, $started_at,
     $lines_read)
RETURNING ingest_id
