-- The derived summary (cores per GPU per cluster, partition, GPU type and month, as
-- `advisor ratios --by cluster,partition,gpu_type,month --format json` prints it), registered
-- by the caller as the relation `export_summary`: $dest/cluster=<c>/.
COPY (SELECT * FROM export_summary) TO $dest (
    FORMAT parquet,
    COMPRESSION zstd,
    PARTITION_BY (cluster),
    KV_METADATA {advisor_schema_version: $schema_version, advisor_table: 'ratios',
                 advisor_version: $advisor_version}
)
