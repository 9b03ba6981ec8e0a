-- ratio_people: each distinct (cluster, GPU type, partition, account, user) of jobs, numbered
-- (pid) so that the people cubes group on one integer; each *_id is the rank of that column's
-- value among its distinct values (NULL last), so group numbers sort as the names do.
{{create}} ratio_people (
    pid          INTEGER NOT NULL,
    cluster      VARCHAR,
    gpu_type     VARCHAR,
    "partition"  VARCHAR,
    account      VARCHAR,
    "user"       VARCHAR,
    cluster_id   INTEGER,
    gpu_type_id  INTEGER,
    partition_id INTEGER,
    account_id   INTEGER,
    user_id      INTEGER
)
