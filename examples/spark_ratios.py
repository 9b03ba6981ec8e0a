"""advisor's cores-per-GPU percentiles from its Parquet dataset, in Spark SQL, without advisor.

Reads ``DIR/jobs`` (written by ``advisor export parquet DIR``), applies advisor's exclusions and
prints, per cluster and GPU type, the jobs, GPU-hours, P25 and P50 cores per GPU, weighted by
jobs or by GPU-hours, as ``advisor ratios --by cluster,gpu_type --format json`` prints them
(docs/ratios.md defines both percentiles; tests/test_spark.py checks that these equal advisor's
figures exactly). Needs pyspark and a Java runtime.

    python examples/spark_ratios.py DIR [--weight jobs|gpu-hours] [--master local[2]]
    spark-submit examples/spark_ratios.py s3a://bucket/advisor --weight gpu-hours
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pyspark.sql import SparkSession

# What a reader of advisor's dataset sets (docs/export.md says why).
READER_CONF = {
    # cluster and month stay strings, as written: Spark would otherwise type a cluster named
    # "2024" as a number and drop leading zeros
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
}

# Every job with advisor's rules (docs/ratios.md): it counts when it got an allocation (a start
# time, GPUs > 0, CPUs > 0); otherwise the first rule it fails is its excluded_reason. Its ratio
# is allocated CPUs over allocated GPUs, its weight its GPU-seconds.
FACTS_SQL = """
CREATE OR REPLACE TEMP VIEW advisor_facts AS
SELECT cluster,
       coalesce(gpu_type, '(untyped)') AS gpu_type,
       month,
       CASE WHEN start IS NULL THEN 'never_started'
            WHEN coalesce(gpus, 0) <= 0 THEN 'no_gpus'
            WHEN coalesce(cpus, 0) <= 0 THEN 'no_cpus' END AS excluded_reason,
       try_divide(CAST(cpus AS DOUBLE), gpus) AS cores_per_gpu,
       CAST(gpus AS BIGINT) * greatest(coalesce(elapsed_s, 0), 0) AS gpu_seconds
FROM advisor_jobs
"""

# Every ratio of a (cluster, GPU type) once, with its jobs and GPU-seconds and their running
# sums in ratio order: both weightings read their percentiles from it. A cluster has few
# distinct ratios, so no window sorts every job (at 46.5M jobs that sort ran a 3 GB driver out
# of memory).
BY_RATIO_SQL = """
CREATE OR REPLACE TEMP VIEW advisor_by_ratio AS
SELECT *,
       sum(jobs) OVER (PARTITION BY cluster, gpu_type ORDER BY cores_per_gpu) AS jobs_upto,
       sum(jobs) OVER (PARTITION BY cluster, gpu_type) AS jobs_total,
       sum(gpu_seconds) OVER (PARTITION BY cluster, gpu_type ORDER BY cores_per_gpu)
           AS seconds_upto,
       sum(gpu_seconds) OVER (PARTITION BY cluster, gpu_type) AS seconds_total
FROM (
    SELECT cluster, gpu_type, cores_per_gpu, count(*) AS jobs, sum(gpu_seconds) AS gpu_seconds
    FROM advisor_facts
    WHERE excluded_reason IS NULL
    GROUP BY cluster, gpu_type, cores_per_gpu
)
"""

# Job-weighted: numpy.percentile's default ("linear"), as advisor computes it. With the n
# ratios of a group sorted, h = (n - 1) q, lo and hi the ratios at positions floor(h) and
# floor(h) + 1 (the last one if none), frac = h - floor(h); the two-sided form rounds as numpy.
# The ratio at a position is the smallest whose running count of jobs passes it.
JOB_WEIGHTED_SQL = """
WITH bounds AS (
    SELECT cluster, gpu_type, q, max(n) AS jobs, sum(gpu_seconds) AS gpu_seconds,
           max((n - 1) * q - floor((n - 1) * q)) AS frac,
           min(CASE WHEN jobs_upto > floor((n - 1) * q) THEN cores_per_gpu END) AS lo,
           min(CASE WHEN jobs_upto > least(floor((n - 1) * q) + 1, n - 1)
                    THEN cores_per_gpu END) AS hi
    FROM (SELECT *, jobs_total AS n FROM advisor_by_ratio)
    CROSS JOIN (VALUES (0.25D), (0.5D)) AS quantiles(q)
    GROUP BY cluster, gpu_type, q
)
SELECT cluster, gpu_type, q, jobs, gpu_seconds,
       CASE WHEN frac >= 0.5 THEN hi - (hi - lo) * (1 - frac)
            ELSE lo + (hi - lo) * frac END AS cores_per_gpu
FROM bounds
"""

# GPU-hour-weighted: the weighted inverted CDF (numpy.percentile(method="inverted_cdf",
# weights=...)): the smallest ratio whose running share of the group's GPU-seconds reaches q.
GPU_HOURS_WEIGHTED_SQL = """
SELECT cluster, gpu_type, q, sum(jobs) AS jobs, max(seconds_total) AS gpu_seconds,
       min(CASE WHEN seconds_total > 0 AND CAST(seconds_upto AS DOUBLE) / seconds_total >= q
                THEN cores_per_gpu END) AS cores_per_gpu
FROM advisor_by_ratio CROSS JOIN (VALUES (0.25D), (0.5D)) AS quantiles(q)
GROUP BY cluster, gpu_type, q
"""

# Spark's own exact percentile (not percentile_approx), weighted by jobs: the same definition
# in its one-sided form lo + (hi - lo) frac (docs/ratios.md: equal but for the last bit).
SPARK_PERCENTILE_SQL = """
SELECT cluster, gpu_type, count(*) AS jobs,
       percentile(cores_per_gpu, array(0.25D, 0.5D)) AS p25_p50
FROM advisor_facts
WHERE excluded_reason IS NULL
GROUP BY cluster, gpu_type
"""

EXCLUDED_SQL = """
SELECT excluded_reason AS reason, count(*) AS jobs
FROM advisor_facts
WHERE excluded_reason IS NOT NULL
GROUP BY excluded_reason
"""


def session(master: str | None = "local[2]", conf: dict[str, str] | None = None) -> SparkSession:
    """A Spark session with the reader's settings and ``conf`` (``master`` None: spark-submit's)."""
    builder = SparkSession.builder.appName("advisor-ratios")
    if master:
        builder = builder.master(master)
    for key, value in {**READER_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def read_jobs(spark: SparkSession, dataset: str) -> None:
    """Register ``DIR/jobs`` as the view advisor_jobs, advisor's facts as advisor_facts and
    their ratios counted as advisor_by_ratio."""
    # mergeSchema: a federation may hold files of several schema versions (newer ones add
    # columns at the end); without it Spark takes one file's columns for all.
    jobs = spark.read.option("mergeSchema", "true").parquet(f"{dataset.rstrip('/')}/jobs")
    jobs.createOrReplaceTempView("advisor_jobs")
    spark.sql(FACTS_SQL)
    spark.sql(BY_RATIO_SQL)


def ratios(spark: SparkSession, weight: str = "jobs") -> list[dict[str, Any]]:
    """Per cluster and GPU type, ordered by them: jobs, GPU-hours, P25 and P50 cores per GPU,
    the keys and values of ``advisor ratios --by cluster,gpu_type --weight WEIGHT``."""
    sql = JOB_WEIGHTED_SQL if weight == "jobs" else GPU_HOURS_WEIGHTED_SQL
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for r in spark.sql(sql).collect():
        g = groups.setdefault(
            (r["cluster"], r["gpu_type"]),
            {
                "cluster": r["cluster"],
                "gpu_type": r["gpu_type"],
                "jobs": r["jobs"],
                "gpu_hours": r["gpu_seconds"] / 3600.0,
            },
        )
        g[{0.25: "p25", 0.5: "p50"}[r["q"]]] = r["cores_per_gpu"]
    return [groups[k] for k in sorted(groups)]


def spark_percentiles(spark: SparkSession) -> list[dict[str, Any]]:
    """Spark's built-in exact ``percentile``, job-weighted, per cluster and GPU type."""
    rows = spark.sql(SPARK_PERCENTILE_SQL).collect()
    out = [
        {
            "cluster": r["cluster"],
            "gpu_type": r["gpu_type"],
            "jobs": r["jobs"],
            "p25": r["p25_p50"][0],
            "p50": r["p25_p50"][1],
        }
        for r in rows
    ]
    return sorted(out, key=lambda g: (g["cluster"], g["gpu_type"]))


def excluded(spark: SparkSession) -> list[dict[str, Any]]:
    """The jobs left out, per reason, as ``advisor ratios --excluded`` counts them."""
    return [{"reason": r["reason"], "jobs": r["jobs"]} for r in spark.sql(EXCLUDED_SQL).collect()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", help="the folder (or s3a:// URL) advisor export parquet wrote")
    ap.add_argument("--weight", choices=("jobs", "gpu-hours"), default="jobs")
    ap.add_argument("--master", default="local[2]", help="'' to take spark-submit's")
    args = ap.parse_args()
    spark = session(args.master or None)
    read_jobs(spark, args.dataset)
    print(json.dumps(ratios(spark, args.weight), indent=2))
    spark.stop()


if __name__ == "__main__":
    main()
