-- The node inventory (for the fair share and the recommendations' node caps), one folder per
-- cluster: $dest/cluster=<c>/.
COPY (SELECT * FROM nodes) TO $dest (
    FORMAT parquet,
    COMPRESSION zstd,
    PARTITION_BY (cluster),
    KV_METADATA {advisor_schema_version: $schema_version, advisor_table: 'nodes',
                 advisor_version: $advisor_version}
)
