-- The dataset's jobs into the (empty, migrated) jobs table, matching columns by name: the
-- cluster comes back from the folder name, the month (derived) is dropped. A file of an older
-- schema lacks newer columns, which stay NULL.
INSERT INTO jobs BY NAME
SELECT * EXCLUDE (month)
FROM read_parquet($files, hive_partitioning = true, union_by_name = true,
                  hive_types = {'cluster': VARCHAR, 'month': VARCHAR})
