-- The jobs table as a Hive-partitioned Parquet dataset: $dest/cluster=<c>/month=<YYYY-MM>/.
-- The month is the one `advisor ratios` files a job under: the UTC month it started in, or its
-- submit month when it never started. cluster and month live in the folder names only.
-- $dest is a fresh version folder (advisor.export writes aside, then swaps it in).
COPY (
    SELECT *, strftime(coalesce(start, submit), '%Y-%m') AS month
    FROM jobs
) TO $dest (
    FORMAT parquet,
    COMPRESSION zstd,
    PARTITION_BY (cluster, month),
    KV_METADATA {advisor_schema_version: $schema_version, advisor_table: 'jobs',
                 advisor_version: $advisor_version}
)
