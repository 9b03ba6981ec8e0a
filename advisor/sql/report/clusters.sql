-- The clusters in the database with their allocation counts, by name.
SELECT cluster, count(*) AS jobs FROM jobs GROUP BY cluster ORDER BY cluster
