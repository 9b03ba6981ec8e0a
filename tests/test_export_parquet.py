"""The Parquet dataset: written Hive-partitioned with its schema version, read back by
``advisor ratios --parquet`` and ``advisor report --parquet`` with the DuckDB file's answers, and
several centres' exports combined in one folder. Real DuckDB files and real Parquet files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from advisor import store
from tests.conftest import SAMPLE


def _load(db: Path) -> Path:
    from advisor.ingest import ingest_files
    from advisor.ingest.nodes import NodeIngestConfig, ingest_nodes

    ingest_files(str(db), [SAMPLE / "sacct-synth.txt.gz"])
    con = store.connect(db)
    try:
        ingest_nodes(
            con, NodeIngestConfig(path=str(SAMPLE / "scontrol-nodes-synth.txt"), cluster="teaching")
        )
    finally:
        con.close()
    return db


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory) -> Path:
    """The shipped sample (two clusters) and a node inventory, in a real DuckDB file."""
    return _load(tmp_path_factory.mktemp("whole") / "whole.duckdb")


@pytest.fixture(scope="module")
def dataset(sample_db: Path, tmp_path_factory) -> Path:
    from advisor.export import ExportConfig, export_parquet

    out = tmp_path_factory.mktemp("dataset") / "advisor"
    export_parquet(ExportConfig(out_dir=out, db=sample_db))
    return out


def _json(cli, *args: str) -> list[dict]:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(
    "by, weight",
    [
        ("gpu_type", "jobs"),
        ("cluster,gpu_type", "jobs"),
        ("cluster,partition,gpu_type,month", "jobs"),
        ("cluster,gpu_type", "gpu-hours"),
        ("account,gpu_type", "jobs"),
        ("user,month", "gpu-hours"),
    ],
)
def test_percentiles_from_the_parquet_dataset_equal_those_from_the_duckdb_file(
    cli, sample_db, dataset, by, weight
):
    from_db = _json(cli, "ratios", "--by", by, "--weight", weight, "--db", str(sample_db))
    from_parquet = _json(cli, "ratios", "--by", by, "--weight", weight, "--parquet", str(dataset))
    assert len(from_db) > 1
    assert from_parquet == from_db  # every group, percentile, share and fair share


def test_filters_and_the_excluded_jobs_answer_the_same_over_the_dataset(cli, sample_db, dataset):
    args = (
        "ratios",
        "--by",
        "partition",
        "--start",
        "2024-03-01",
        "--end",
        "2024-07-01",
        "--cluster",
        "teaching",
    )
    assert _json(cli, *args, "--parquet", str(dataset)) == _json(cli, *args, "--db", str(sample_db))
    excl = ("ratios", "--excluded")
    assert _json(cli, *excl, "--parquet", str(dataset)) == _json(cli, *excl, "--db", str(sample_db))


def test_the_dataset_is_hive_partitioned_and_every_file_names_its_schema_version(
    sample_db, dataset
):
    con = store.connect(sample_db, read_only=True)
    version = store.schema_version(con)
    months = {
        r[0]
        for r in con.execute(
            "SELECT DISTINCT cluster || '/' || strftime(coalesce(start, submit), '%Y-%m') FROM jobs"
        ).fetchall()
    }
    con.close()
    files = sorted((dataset / "jobs").rglob("*.parquet"))
    assert {f"{f.parent.parent.name[8:]}/{f.parent.name[6:]}" for f in files} == months
    assert all(
        f.parent.parent.name.startswith("cluster=") and f.parent.name.startswith("month=")
        for f in files
    )
    for f in [*files, *(dataset / "nodes").rglob("*.parquet"), *(dataset / "ratios").rglob("*")]:
        if f.is_file():
            meta = pq.read_metadata(f).metadata
            assert meta[b"advisor_schema_version"] == str(version).encode()
            assert meta[b"advisor_table"] in (b"jobs", b"nodes", b"ratios")
    # The partition columns live in the folder names only, as Hive readers expect.
    assert "cluster" not in pq.read_schema(files[0]).names
    assert "month" not in pq.read_schema(files[0]).names


def test_the_derived_summary_holds_the_ratios_of_each_cluster_partition_gpu_type_and_month(
    cli, sample_db, dataset
):
    by = "cluster,partition,gpu_type,month"
    expected = _json(cli, "ratios", "--by", by, "--db", str(sample_db))
    rows = (
        duckdb.sql(
            "SELECT * FROM read_parquet(?, hive_partitioning = true)",
            params=[str(dataset / "ratios" / "**" / "*.parquet")],
        )
        .to_arrow_table()
        .to_pylist()
    )
    got = {(r["cluster"], r["partition"], r["gpu_type"], r["month"]): r for r in rows}
    assert len(got) == len(expected)
    for e in expected:
        r = got[(e["cluster"], e["partition"], e["gpu_type"], e["month"])]
        assert (r["jobs"], r["p25"], r["p50"]) == (e["jobs"], e["p25"], e["p50"])


def test_two_centres_exporting_into_one_folder_combine_to_the_whole(cli, sample_db, tmp_path):
    # Each centre holds one cluster of the sample; their exports land in one shared folder.
    shared = tmp_path / "federation"
    for keep in ("teaching", "research"):
        centre = tmp_path / f"{keep}.duckdb"
        shutil.copy2(sample_db, centre)
        con = store.connect(centre)
        con.execute("DELETE FROM jobs WHERE cluster <> ?", [keep])
        con.execute("DELETE FROM nodes WHERE cluster <> ?", [keep])
        con.close()
        code, _, err = cli("export", "parquet", str(shared), "--db", str(centre))
        assert code == 0, err
    # Exporting a centre again replaces its files rather than adding rows.
    code, _, err = cli("export", "parquet", str(shared), "--db", str(tmp_path / "teaching.duckdb"))
    assert code == 0, err
    for by in ("cluster,gpu_type", "gpu_type", "partition,month"):
        combined = _json(cli, "ratios", "--by", by, "--parquet", str(shared))
        assert combined == _json(cli, "ratios", "--by", by, "--db", str(sample_db))


def test_the_report_from_the_dataset_shows_the_numbers_of_the_report_from_the_file(
    cli, sample_db, dataset, tmp_path
):
    from tests.test_report import html_values

    pages = {}
    for name, source in (("db", ("--db", str(sample_db))), ("pq", ("--parquet", str(dataset)))):
        code, _, err = cli("report", "--month", "2024-06", "--out", str(tmp_path / name), *source)
        assert code == 0, err
        pages[name] = html_values((tmp_path / name / "2024-06" / "report.html").read_text())

    # The data-quality section reads the ingest log, which a dataset does not carry; the data's
    # age is measured when each report is made.
    def numbers(values: dict[str, str]) -> dict[str, str]:
        return {
            k: v
            for k, v in values.items()
            if not k.startswith(("quality", "ingest")) and not k.endswith(".age_days")
        }

    assert len(numbers(pages["db"])) > 10
    assert numbers(pages["pq"]) == numbers(pages["db"])


def test_a_dataset_of_a_newer_schema_is_refused_with_the_fix(cli, dataset, tmp_path):
    newer = tmp_path / "newer"
    shutil.copytree(dataset, newer)
    (f,) = list((newer / "jobs").rglob("*.parquet"))[:1]
    duckdb.execute(
        "COPY (SELECT * FROM read_parquet($src)) TO $dst (FORMAT parquet, "
        "KV_METADATA {advisor_schema_version: '999'})",
        {"src": str(f), "dst": str(f.with_name("data_9.parquet"))},
    )
    code, _, err = cli("ratios", "--parquet", str(newer))
    assert code == 1  # StoreError: ExitCode.ERROR
    assert err.startswith("Error: ") and "schema version 999" in err and "upgrade" in err


def test_a_folder_that_is_not_a_dataset_is_not_found(cli, tmp_path):
    code, _, err = cli("ratios", "--parquet", str(tmp_path / "nowhere"))
    assert code == 4 and "advisor export parquet" in err
    (tmp_path / "empty").mkdir()
    code, _, err = cli("ratios", "--parquet", str(tmp_path / "empty"))
    assert code == 4 and "jobs/**/*.parquet" in err


def test_an_object_store_url_without_the_extension_says_how_to_install_it(
    cli, monkeypatch, tmp_path
):
    # An empty home: DuckDB finds no installed extensions there, and advisor downloads none, so
    # this touches no network.
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = cli("ratios", "--parquet", "s3://example-bucket/advisor")
    assert code == 5, err
    assert err.startswith("Error: s3://example-bucket/advisor: ")
    assert "INSTALL httpfs" in err
    assert not (tmp_path / ".duckdb" / "extensions").exists() or not any(
        (tmp_path / ".duckdb" / "extensions").rglob("*.duckdb_extension")
    )


def test_an_opened_dataset_is_held_under_a_memory_limit_and_may_spill(dataset):
    """Issue 40: at 46.5M jobs `--parquet` held the whole dataset in memory past 16 GiB; it now
    runs under a limit with a temporary folder to spill to, and answers the same."""
    from advisor import export

    con = export.open_dataset(str(dataset))
    try:
        limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        spill = con.execute("SELECT current_setting('temp_directory')").fetchone()[0]
        jobs = con.execute("SELECT count(*) FROM jobs").fetchone()[0]
    finally:
        con.close()
    assert limit == "3.7 GiB"  # 4 GB
    assert spill.endswith("advisor-dataset-spill") and jobs > 0
