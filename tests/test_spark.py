"""Real Spark (pyspark in local mode, on Debian's Java) reads the shipped sample's Parquet
dataset and, running examples/spark_ratios.py (the code docs/export.md shows), gets advisor's
P25/P50 cores per GPU per cluster and GPU type, job- and GPU-hour-weighted, exactly; its
exclusions, months and column types as advisor wrote them. One SparkSession for the session."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.test_export_parquet import _load

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def spark():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("SKIPPED LOUDLY: no Java runtime for Spark (run scripts/dev-setup as root)")
    pytest.importorskip("pyspark", reason="SKIPPED LOUDLY: pyspark missing (pip install -e .[dev])")
    from examples.spark_ratios import session

    # a quick local session: two cores, few shuffle partitions, no web UI
    s = session(
        "local[2]",
        {
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
        },
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> tuple[Path, Path]:
    """The shipped sample in a real DuckDB file and the dataset exported from it."""
    from advisor.export import ExportConfig, export_parquet

    base = tmp_path_factory.mktemp("spark")
    db = _load(base / "sample.duckdb")
    out = base / "dataset"
    export_parquet(ExportConfig(out_dir=out, db=db))
    return db, out


def _advisor(cli, *args: str) -> list[dict]:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("weight", ["jobs", "gpu-hours"])
def test_spark_computes_advisors_p25_and_p50_exactly(cli, spark, sample, weight):
    from examples.spark_ratios import ratios, read_jobs

    db, dataset = sample
    want = [
        {k: g[k] for k in ("cluster", "gpu_type", "jobs", "gpu_hours", "p25", "p50")}
        for g in _advisor(
            cli, "ratios", "--by", "cluster,gpu_type", "--weight", weight, "--db", str(db)
        )
    ]
    read_jobs(spark, str(dataset))
    got = ratios(spark, weight)
    assert len(got) >= 4  # two clusters, several GPU types
    assert got == want  # every key, count and percentile, to the last bit


def test_sparks_own_percentile_differs_from_advisors_only_by_rounding(cli, spark, sample, tmp_path):
    """Spark's exact ``percentile`` interpolates as lo + (hi - lo) f for every f, numpy (and
    advisor) as hi - (hi - lo)(1 - f) where f >= 1/2: the same numbers on the sample, one
    rounding apart for the median of two jobs of 1 and 3 CPUs on 6 GPUs (docs/ratios.md)."""
    import math

    from advisor import store
    from advisor.export import ExportConfig, export_parquet
    from examples.spark_ratios import ratios, read_jobs, spark_percentiles

    db, dataset = sample
    want = _advisor(cli, "ratios", "--by", "cluster,gpu_type", "--db", str(db))
    read_jobs(spark, str(dataset))
    assert spark_percentiles(spark) == [
        {k: g[k] for k in ("cluster", "gpu_type", "jobs", "p25", "p50")} for g in want
    ]

    two = tmp_path / "two.duckdb"
    con = store.connect(two)
    con.execute(
        "INSERT INTO jobs (cluster, job_id_raw, submit, job_id, state, start, elapsed_s, cpus, "
        "gpus, gpu_type) SELECT 'c', i, TIMESTAMP '2024-05-01', i::VARCHAR, 'COMPLETED', "
        "TIMESTAMP '2024-05-01 00:01', 60, cpus, 6, 'H100' FROM (VALUES (1, 1), (2, 3)) t(i, cpus)"
    )
    con.close()
    export_parquet(ExportConfig(out_dir=tmp_path / "two", db=two))
    (adv,) = _advisor(cli, "ratios", "--by", "cluster,gpu_type", "--db", str(two))
    read_jobs(spark, str(tmp_path / "two"))
    (defined,) = ratios(spark, "jobs")
    (builtin,) = spark_percentiles(spark)
    lo, hi = 1 / 6, 3 / 6
    assert defined["p50"] == adv["p50"] == hi - (hi - lo) * 0.5
    assert builtin["p50"] == lo + (hi - lo) * 0.5 != adv["p50"]
    assert builtin["p50"] == math.nextafter(adv["p50"], math.inf)  # one rounding apart
    assert builtin["p25"] == defined["p25"] == adv["p25"] == lo + (hi - lo) * 0.25


def test_spark_counts_advisors_exclusions(cli, spark, sample):
    from examples.spark_ratios import excluded, read_jobs

    db, dataset = sample
    want = _advisor(cli, "ratios", "--excluded", "--db", str(db))
    read_jobs(spark, str(dataset))
    assert sorted(excluded(spark), key=lambda r: r["reason"]) == sorted(
        want, key=lambda r: r["reason"]
    )
    assert {r["reason"] for r in want} >= {"never_started", "no_gpus"}


def test_spark_reads_utc_months_and_string_partitions_whatever_its_time_zone(spark, sample):
    from examples.spark_ratios import read_jobs

    _, dataset = sample
    read_jobs(spark, str(dataset))
    types = dict(spark.table("advisor_jobs").dtypes)
    assert types["cluster"] == types["month"] == "string"
    assert types["start"] == types["submit"] == "timestamp_ntz"  # wall-clock UTC, no zone
    assert types["cpus"] == types["gpus"] == "int" and types["billing"] == "double"
    for zone in ("America/Los_Angeles", "Asia/Kolkata", "UTC"):
        spark.conf.set("spark.sql.session.timeZone", zone)
        try:
            wrong = spark.sql(
                "SELECT count(*) AS n FROM advisor_jobs "
                "WHERE date_format(coalesce(start, submit), 'yyyy-MM') <> month"
            ).collect()[0]["n"]
        finally:
            spark.conf.unset("spark.sql.session.timeZone")
        assert wrong == 0, zone


def test_the_summary_reads_in_spark_with_one_type_per_column(cli, spark, sample, tmp_path):
    # Two centres, one with a node inventory and one without: the summary's fair-share columns
    # hold only nulls in the second's files, and Spark must still read both as doubles.
    from advisor import store
    from advisor.export import ExportConfig, export_parquet

    db, _ = sample
    shared = tmp_path / "federation"
    for keep in ("teaching", "research"):
        centre = tmp_path / f"{keep}.duckdb"
        shutil.copy2(db, centre)
        con = store.connect(centre)
        con.execute("DELETE FROM jobs WHERE cluster <> ?", [keep])
        # research's centre has no node inventory at all
        con.execute("DELETE FROM nodes WHERE cluster <> ? OR cluster = 'research'", [keep])
        con.close()
        export_parquet(ExportConfig(out_dir=shared, db=centre))
    summary = spark.read.option("mergeSchema", "true").parquet(str(shared / "ratios"))
    types = dict(summary.dtypes)
    assert types["fair_share_cores_per_gpu"] == types["p50"] == "double"
    assert types["jobs"] == "bigint"
    rows = summary.where("cluster = 'research'").collect()
    assert rows and all(r["fair_share_cores_per_gpu"] is None for r in rows)
    teaching = summary.where("cluster = 'teaching'").collect()
    assert teaching and all(r["fair_share_cores_per_gpu"] > 0 for r in teaching)
    want = _advisor(cli, "ratios", "--by", "cluster,partition,gpu_type,month", "--db", str(db))
    assert summary.count() == len(want)


def test_the_docs_show_the_code_the_tests_run():
    import examples.spark_ratios as example

    def squash(text: str) -> str:
        return re.sub(r"\s+", " ", text).strip()

    ratios_md = squash((ROOT / "docs" / "ratios.md").read_text())
    for sql in (
        example.JOB_WEIGHTED_SQL,
        example.GPU_HOURS_WEIGHTED_SQL,
        example.FACTS_SQL,
        example.BY_RATIO_SQL,
    ):
        assert squash(sql) in ratios_md
    export_md = (ROOT / "docs" / "export.md").read_text()
    assert "examples/spark_ratios.py" in export_md
    for key, value in example.READER_CONF.items():
        assert f'"{key}": "{value}"' in export_md or f'"{key}", "{value}"' in export_md
