-- The jobs table as a Hive-partitioned Parquet dataset: $dest/cluster=<c>/month=<YYYY-MM>/.
-- The month is the one `advisor ratios` files a job under: the UTC month it started in, or its
-- submit month when it never started. cluster and month live in the folder names only.
-- OVERWRITE_OR_IGNORE replaces this export's files and leaves other clusters' folders alone,
-- so several centres can export into one folder.
COPY (
    SELECT *, strftime(coalesce(start, submit), '%Y-%m') AS month
    FROM jobs
) TO $dest (
    FORMAT parquet,
    COMPRESSION zstd,
    PARTITION_BY (cluster, month),
    OVERWRITE_OR_IGNORE,
    KV_METADATA {advisor_schema_version: $schema_version, advisor_table: 'jobs',
                 advisor_version: $advisor_version}
)
