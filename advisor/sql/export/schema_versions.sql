-- The advisor schema versions the dataset's files were written with, and how many files each.
SELECT decode(value) AS schema_version, count(DISTINCT file_name) AS files
FROM parquet_kv_metadata($files)
WHERE decode(key) = 'advisor_schema_version'
GROUP BY ALL
ORDER BY 1
