"""The derived tables own their schema: an old database upgrades and answers the same, the
job mix table answers recommend as the jobs table does, and docs/schema.sql is current."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from advisor import ratios, store
from advisor.derived import cube
from advisor.ratios import RatioQuery
from advisor.recommend import PartitionQuery, recommend_partitions

ROOT = Path(__file__).resolve().parent.parent
OLD_MIGRATIONS = Path(__file__).resolve().parent / "fixtures" / "migrations_before_renumbering"
SAMPLE = ROOT / "data" / "sample" / "sacct-synth.txt.gz"
NODES = ROOT / "data" / "sample" / "scontrol-nodes-synth.txt"


def _ingested(path: Path, source: Path) -> Path:
    from advisor import ingest
    from advisor.ingest import nodes

    con = store.connect(path)
    ingest.ingest_files(con, [source])
    nodes.ingest_nodes(con, nodes.NodeIngestConfig(path=NODES))
    con.close()
    return path


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _ingested(tmp_path_factory.mktemp("sample") / "advisor.duckdb", SAMPLE)


@pytest.fixture(scope="module")
def synth_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from advisor.ingest import synth

    tmp = tmp_path_factory.mktemp("synth")
    synth.generate(synth.SynthConfig(records=6_000, seed=7), tmp / "sacct.txt")
    return _ingested(tmp / "advisor.duckdb", tmp / "sacct.txt")


def _old_database(path: Path, source: Path) -> None:
    """A file as the advisor before the one-line numbering left it: every old migration text
    replayed in its old order and recorded under its old number, with jobs, ingests and nodes
    copied from ``source`` and an old cube in the old tables."""
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
        " applied_at TIMESTAMP NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'))"
    )
    for sql_file in sorted(OLD_MIGRATIONS.glob("*.sql")):
        con.execute(sql_file.read_text(encoding="utf-8"))
        con.execute(
            "INSERT INTO schema_version (version, name) VALUES (?, ?)",
            [int(sql_file.name[:3]), sql_file.name],
        )
    con.execute(f"ATTACH '{source}' AS src (READ_ONLY)")
    for table in ("ingests", "jobs", "nodes"):
        # the old table's columns only: later migrations add columns to today's
        cols = ", ".join(f'"{r[0]}"' for r in con.execute(f"DESCRIBE {table}").fetchall())
        con.execute(f"INSERT INTO {table} SELECT {cols} FROM src.{table}")  # noqa: S608
    # an old cube that would be wrong if read: one bogus row under a matching fingerprint
    con.execute(
        "INSERT INTO ratio_cube (cluster, gpu_type, gpus, cpus, n, w) "
        "VALUES ('bogus', 'H100', 1, 1, 999, 999)"
    )
    con.execute(
        "INSERT INTO ratio_cube_state SELECT (SELECT count(*) FROM jobs), "
        "(SELECT max(ingest_id) FROM ingests WHERE format <> 'scontrol-node'), "
        "(SELECT max(finished_at) FROM ingests WHERE format <> 'scontrol-node'), now(), 5"
    )
    con.close()


QUERIES = (
    RatioQuery(by=("cluster", "gpu_type")),
    RatioQuery(by=("user",), start=dt.datetime(2024, 2, 1)),
    RatioQuery(by=("account", "month")),
)


def test_a_file_of_the_old_numbering_upgrades_and_answers_the_same_ratios(sample_db, tmp_path):
    old = tmp_path / "old.duckdb"
    _old_database(old, sample_db)
    ro = duckdb.connect(str(old), read_only=True)
    # its migrations read under today's numbers: only those written since are pending
    renumbered = max(store.RENUMBERED.values())
    assert store.schema_version(ro) == renumbered
    assert store.pending(ro) == [v for v, _, _ in store.migrations() if v > renumbered]
    assert not ratios.cube_is_fresh(ro)  # the old cube is never read
    ro.close()
    con = store.connect(old)
    names = con.execute("SELECT version, name FROM schema_version ORDER BY version").fetchall()
    assert names == [(v, name) for v, name, _ in store.migrations()]
    fresh = store.connect(sample_db, read_only=True)
    for q in QUERIES:
        assert ratios.ratio_summary(con, q, use_cube=True) == ratios.ratio_summary(
            fresh, q, use_cube=False
        ), q
    assert ratios.cube_is_fresh(con)
    assert con.execute("SELECT count(*) FROM ratio_cube WHERE cluster = 'bogus'").fetchone() == (0,)
    columns = {r[0] for r in con.execute("DESCRIBE ratio_cube").fetchall()}
    assert {"jobs", "gpu_seconds"} <= columns and not {"n", "w"} & columns
    fresh.close()
    con.close()


def test_another_rules_version_drops_and_rebuilds_the_derived_tables(sample_db, tmp_path):
    path = tmp_path / "copy.duckdb"
    path.write_bytes(sample_db.read_bytes())
    con = store.connect(path)
    ratios.refresh_ratio_cube(con)
    con.execute("UPDATE ratio_cube_schema SET rules_version = rules_version - 1")
    con.execute("ALTER TABLE ratio_cube ADD COLUMN leftover INTEGER")
    assert not ratios.cube_is_fresh(con)
    q = RatioQuery(by=("gpu_type",))
    assert ratios.ratio_summary(con, q) == ratios.ratio_summary(con, q, use_cube=False)
    assert ratios.cube_is_fresh(con)
    columns = {r[0] for r in con.execute("DESCRIBE ratio_cube").fetchall()}
    assert "leftover" not in columns
    con.close()


WINDOWS = (
    {},
    {"start": dt.datetime(2024, 2, 1), "end": dt.datetime(2024, 4, 1)},
    {"start": dt.datetime(2024, 3, 1)},
    {"clusters": ["teaching"]},
    {"partition": "gpu-h100", "gpu_type": "H100"},
    {"start": dt.datetime(2024, 5, 1), "end": dt.datetime(2024, 6, 1), "clusters": ["research"]},
)


@pytest.mark.parametrize("which", ["sample_db", "synth_db"])
def test_the_job_mix_table_gives_the_rows_and_partition_report_of_the_jobs_table(which, request):
    path = request.getfixturevalue(which)
    con = store.connect(path)
    ratios.refresh_ratio_cube(con)
    for window in WINDOWS:
        params = {
            "partition": None,
            "gpu_type": None,
            "clusters": [],
            "start": None,
            "end": None,
            **window,
        }
        from_table = cube.job_mix(con, params, use_table=True)
        assert from_table, window
        assert from_table == cube.job_mix(con, params, use_table=False), window
    con.close()
    for window in (*WINDOWS[:3], WINDOWS[-1]):
        kw = {k: v for k, v in window.items() if k in ("start", "end")}
        with_table = recommend_partitions(PartitionQuery(db=str(path), **kw))
        con = store.connect(path)
        con.execute("DELETE FROM ratio_cube_state")  # stale: recommend reads jobs
        con.close()
        from_jobs = recommend_partitions(PartitionQuery(db=str(path), **kw))
        assert with_table == from_jobs, window
        con = store.connect(path)
        ratios.refresh_ratio_cube(con)
        con.close()


def test_a_window_not_on_month_boundaries_reads_the_jobs_table(sample_db):
    con = store.connect(sample_db, read_only=True)
    params = {
        "partition": None,
        "gpu_type": None,
        "clusters": [],
        "start": dt.datetime(2024, 2, 10),
        "end": None,
    }
    assert (
        cube.job_mix(con, params)
        == con.execute(
            store.render("recommend/job_mix", mix=store.query("recommend/job_mix_jobs")), params
        ).fetchall()
    )
    with pytest.raises(Exception, match="month-aligned"):
        cube.job_mix(con, params, use_table=True)
    con.close()


def test_docs_schema_sql_is_the_schema_of_a_fresh_database():
    from advisor.schema import schema_sql

    text = (ROOT / "docs" / "schema.sql").read_text(encoding="utf-8")
    assert text == schema_sql(), "regenerate: python -m advisor.schema > docs/schema.sql"


def test_a_schema_version_of_the_old_numbering_reads_as_todays():
    """An exported dataset records its database's version: one written before the one-line
    numbering (032 at most) is not newer than this advisor."""
    assert store.renumbered(32) == 7 and store.renumbered(28) == 5 and store.renumbered(11) == 3
    assert store.renumbered(3) == 3
    assert store.renumbered(999) == 999  # newer than any: still refused
