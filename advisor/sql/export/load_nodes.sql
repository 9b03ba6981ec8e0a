-- The dataset's node inventory into the (empty, migrated) nodes table, by column name.
INSERT INTO nodes BY NAME
SELECT *
FROM read_parquet($files, hive_partitioning = true, union_by_name = true,
                  hive_types = {'cluster': VARCHAR})
