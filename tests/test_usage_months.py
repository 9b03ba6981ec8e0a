"""The derived table ``usage_months`` answers a usage summary as the jobs do: every figure of
every group the same (floats up to the order they are added in), the median job's efficiency
to the hundredth (from each cell's jobs counted by that value), and the jobs table read whenever
the table cannot answer (other thresholds, a filter it lacks, bounds inside a month, stale).

Real DuckDB files in a temp dir, loaded by the real ingest: the usage fixture (jobs with and
without usage, starved and over-provisioned ones) and a synthetic log with usage fields.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from pathlib import Path
from typing import Any

import pytest

from advisor import ratios, store, usage
from advisor.errors import UsageError
from advisor.ingest import ingest_files

FIX = Path(__file__).resolve().parent / "fixtures" / "usage"


@pytest.fixture(scope="module")
def text_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("usage_months") / "advisor.duckdb"
    ingest_files(db, [FIX / "sacct-usage.txt"])
    return db


@pytest.fixture(scope="module")
def synth_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from advisor.ingest import synth

    tmp = tmp_path_factory.mktemp("usage_months_synth")
    synth.generate(synth.SynthConfig(records=4_000, seed=11, usage=True), tmp / "sacct.txt")
    db = tmp / "advisor.duckdb"
    ingest_files(db, [tmp / "sacct.txt"])
    return db


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def _assert_same_report(got: usage.UsageReport, want: usage.UsageReport) -> None:
    assert got.advice == want.advice
    assert got.saturates_at_cores_per_gpu == want.saturates_at_cores_per_gpu
    for mine, theirs in (
        ([got.overall], [want.overall]),
        (got.groups, want.groups),
        (got.by_cores_per_gpu, want.by_cores_per_gpu),
    ):
        assert [g.keys for g in mine] == [g.keys for g in theirs]
        for g, w in zip(mine, theirs, strict=True):
            gr, wr = dataclasses.asdict(g), dataclasses.asdict(w)
            bad = {k: (gr[k], wr[k]) for k in gr if not _same(gr[k], wr[k])}
            assert not bad, (g.keys, bad)


QUERIES = (
    {"by": ("gpu_type",)},
    {"by": ()},
    {"by": ("cluster", "partition")},
    {"by": ("month",), "start": dt.datetime(2024, 2, 1)},
    {"by": ("gpu_count",), "end": dt.datetime(2024, 3, 1)},
    {"by": ("cores_per_gpu_bin",), "gpu_types": ("H100",)},
    {"by": ("gpu_type",), "clusters": ("nowhere",)},  # nothing selected
)


@pytest.mark.parametrize("which", ["text_db", "synth_db"])
def test_the_table_gives_every_figure_of_the_jobs_table(which, request) -> None:
    con = store.connect(request.getfixturevalue(which))
    ratios.refresh_ratio_cube(con)
    for kw in QUERIES:
        q = usage.UsageQuery(usd_per_gpu_hour={"H100": 6.0, "A100": 4.0}, **kw)
        assert usage.table_answers(q)
        want = usage.usage_summary(con, q, use_table=False)
        _assert_same_report(usage.usage_summary(con, q, use_table=True), want)
        _assert_same_report(usage.usage_summary(con, q), want)  # fresh: the table is read
    con.close()


@pytest.mark.parametrize("which", ["text_db", "synth_db"])
def test_the_people_table_gives_the_top_groups_of_the_jobs(which, request) -> None:
    con = store.connect(request.getfixturevalue(which))
    ratios.refresh_ratio_cube(con)
    for by in (("account",), ("user",), ("account", "partition"), ("user", "month")):
        for kw in ({}, {"start": dt.datetime(2024, 2, 1)}, {"gpu_types": ("H100",)}):
            q = usage.UsageQuery(by=by, usd_per_gpu_hour={"H100": 6.0, "A100": 4.0}, **kw)
            assert usage.people_table_answers(q) and not usage.table_answers(q)
            want = usage.top_groups(con, q, 5, use_table=False)
            got = usage.top_groups(con, q, 5, use_table=True)
            assert usage.top_groups(con, q, 5) == got  # fresh: the table is read
            assert [g.keys for g in got] == [g.keys for g in want]
            for g, w in zip(got, want, strict=True):
                gr, wr = dataclasses.asdict(g), dataclasses.asdict(w)
                assert gr.pop("cpu_efficiency_p50") is None  # the table keeps no counts a person
                wr.pop("cpu_efficiency_p50")
                bad = {k: (gr[k], wr[k]) for k in gr if not _same(gr[k], wr[k])}
                assert not bad, (g.keys, bad)
    ranked = usage.top_groups(con, usage.UsageQuery(by=("user",)), 100)
    assert ranked and all(
        (a.starved_gpu_hours, a.gpu_hours) >= (b.starved_gpu_hours, b.gpu_hours)
        for a, b in zip(ranked, ranked[1:], strict=False)
    )
    with pytest.raises(UsageError):  # a filter the table lacks
        usage.top_groups(con, usage.UsageQuery(by=("user",), accounts=("physics",)), use_table=True)
    con.close()


@pytest.mark.parametrize("which", ["text_db", "synth_db"])
def test_the_starved_jobs_shapes_come_from_the_table_as_from_the_jobs(which, request) -> None:
    con = store.connect(request.getfixturevalue(which))
    ratios.refresh_ratio_cube(con)
    found = 0
    for kw in QUERIES:
        q = usage.UsageQuery(**{k: v for k, v in kw.items() if k != "by"})
        want = usage.starved_mix(con, q, use_table=False)
        got = usage.starved_mix(con, q, use_table=True)
        assert usage.starved_mix(con, q) == got  # fresh: the table is read
        assert [{k: v for k, v in r.items() if k != "gpu_hours"} for r in got] == [
            {k: v for k, v in r.items() if k != "gpu_hours"} for r in want
        ]
        assert [r["gpu_hours"] for r in got] == pytest.approx([r["gpu_hours"] for r in want])
        found += len(got)
    assert found  # starved jobs were there to sum
    with pytest.raises(UsageError):
        usage.starved_mix(con, usage.UsageQuery(accounts=("physics",)), use_table=True)
    con.close()


def test_the_median_comes_from_the_table_not_the_jobs(text_db, tmp_path) -> None:
    import shutil

    db = tmp_path / "copy.duckdb"
    shutil.copy(text_db, db)
    con = store.connect(db)
    ratios.refresh_ratio_cube(con)
    q = usage.UsageQuery(by=("gpu_type",))
    before = usage.usage_summary(con, q, use_table=True)
    h100 = next(g for g in before.groups if g.keys["gpu_type"] == "H100")
    assert h100.jobs_with_usage > 0 and h100.cpu_efficiency_p50 is not None
    # the jobs change under the table (stale now): forced, the table still answers as built
    con.execute("UPDATE jobs SET cpu_used_s = cpu_used_s / 4")
    after_jobs = usage.usage_summary(con, q, use_table=False).overall.cpu_efficiency_p50
    from_table = usage.usage_summary(con, q, use_table=True).overall.cpu_efficiency_p50
    assert from_table == pytest.approx(before.overall.cpu_efficiency_p50)
    assert after_jobs is not None and from_table is not None and after_jobs < from_table
    # the median to the hundredth: a value the counts hold, or the mean of two of them
    assert round(200 * from_table) == pytest.approx(200 * from_table)
    con.close()


def test_what_the_table_cannot_answer_reads_the_jobs(text_db) -> None:
    con = store.connect(text_db)
    ratios.refresh_ratio_cube(con)
    cannot = (
        usage.UsageQuery(by=("user",)),
        usage.UsageQuery(thresholds=usage.UsageThresholds(starved_gpu_util_pct=20.0)),
        usage.UsageQuery(accounts=("physics",)),
        usage.UsageQuery(start=dt.datetime(2024, 2, 10)),
    )
    for q in cannot:
        assert not usage.table_answers(q)
        with pytest.raises(UsageError):
            usage.usage_summary(con, q, use_table=True)
    # other thresholds move the verdicts: the answer is the jobs table's, not the table's
    strict = usage.UsageQuery(thresholds=usage.UsageThresholds(starved_gpu_util_pct=20.0))
    _assert_same_report(
        usage.usage_summary(con, strict), usage.usage_summary(con, strict, use_table=False)
    )
    con.execute("DELETE FROM ratio_cube_state")  # stale: the jobs are read
    con.execute("DELETE FROM usage_months")
    q = usage.UsageQuery(by=("gpu_type",))
    _assert_same_report(usage.usage_summary(con, q), usage.usage_summary(con, q, use_table=False))
    assert usage.usage_summary(con, q).overall.jobs > 0
    con.close()
