-- A cluster name too long for its Parquet folder (cluster=NAME; a file name holds 255 bytes).
SELECT cluster, strlen(cluster) AS bytes
FROM (SELECT DISTINCT cluster FROM jobs)
WHERE strlen('cluster=' || cluster) > 255
ORDER BY bytes DESC
LIMIT 1
