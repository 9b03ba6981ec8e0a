"""Where the cluster measured, the measurement decides (issue 49, items 2, 3 and 5): the
measured curve's figures and intervals, the rule that turns it into a DefCpuPerGPU, and the
partition recommendation that reads it, on a real DuckDB file of the shipped sample with its
synthetic pressure (drawn from the measured mechanism)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import duckdb
import numpy as np
import pytest

from advisor.model.psilink import shipped_links, starved_psi_for
from advisor.model.waitknee import DEFAULT_MAX_WAIT
from advisor.pressure import curve as curve_mod
from advisor.pressure.curve import CurveCell, CurveQuery, cell_of, pressure_curve
from advisor.recommend.measured import (
    MEASURED,
    MODEL,
    agreement,
    decide_default,
    measured_answer,
)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"


def _adv(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "advisor", *args, "--db", str(db)]
    return subprocess.run(cmd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def jobs_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("measured") / "jobs.duckdb"
    done = _adv(db, "ingest", str(SAMPLE / "sacct-synth.txt.gz"))
    assert done.returncode == 0, done.stderr
    return db


@pytest.fixture(scope="module")
def measured_db(tmp_path_factory: pytest.TempPathFactory, jobs_db: Path) -> Path:
    db = tmp_path_factory.mktemp("measured") / "measured.duckdb"
    shutil.copy(jobs_db, db)
    done = _adv(db, "ingest", str(SAMPLE / "pressure-synth.jsonl.gz"))
    assert done.returncode == 0, done.stderr
    return db


def _cell(cores: int, verdict: str, jobs: int = 50) -> CurveCell:
    enough = verdict != "too few"
    mid = {"under": 0.01, "over": 0.3, "unresolved": 0.07, "too few": 0.2}[verdict]
    return CurveCell(("g",), cores, jobs, 100.0, 20.0 if enough else 3.0, mid, mid - 0.005,
                     mid + 0.005, None, None, None, enough, verdict)  # fmt: skip


def test_the_curve_is_the_gpu_hour_weighted_stall_of_the_measured_jobs(measured_db: Path):
    curve = pressure_curve(measured_db, CurveQuery(by=("cluster", "gpu_type", "gpu_count")))
    con = duckdb.connect(str(measured_db), read_only=True)
    try:
        expected = {
            (r[0], r[1], r[2], r[3]): (r[4], r[5])
            for r in con.execute(
                "SELECT cluster, coalesce(gpu_type, '(untyped)'), gpus,"
                " CAST(floor(cpus / gpus) AS INTEGER), count(*),"
                " sum(gpus * elapsed_s * least(psi_some_s / psi_covered_s, 1)) / sum(gpus * elapsed_s)"
                " FROM jobs WHERE psi_status = 'measured' AND gpus > 0 AND cpus > 0"
                " AND start IS NOT NULL AND elapsed_s > 0 GROUP BY ALL"
            ).fetchall()
        }
    finally:
        con.close()
    got = {(*c.group, c.cores_per_gpu): c for c in curve.cells}
    assert got.keys() == expected.keys()
    for key, (jobs, share) in expected.items():
        c = got[key]
        assert c.jobs == jobs and c.some_share == pytest.approx(share, rel=1e-9)
        assert c.some_low <= c.some_share + 1e-12 and c.some_share <= c.some_high + 1e-12
        assert c.enough == (c.jobs >= curve_mod.MIN_JOBS and c.effective_jobs >= 10)
        assert c.verdict == (
            "too few" if not c.enough
            else "under" if c.some_high < curve.threshold
            else "over" if c.some_low >= curve.threshold
            else "unresolved"
        )  # fmt: skip
    # the sample is drawn from the mechanism: every multi-GPU group is starved below one core
    # per GPU and at the machine's floor from four on, measured enough to say so somewhere
    assert any(c.verdict == "over" and c.cores_per_gpu <= 1 for c in curve.cells)
    assert any(c.verdict == "under" and c.cores_per_gpu >= 2 for c in curve.cells)


def test_a_cell_held_by_a_few_long_jobs_is_not_enough_to_decide():
    rng = np.random.default_rng(3)
    w = np.ones(40)
    w[0] = 400.0  # one job of 40 holds most of the GPU-hours
    some = rng.uniform(0.0, 0.02, 40)
    c = cell_of(("g",), 4, w, some, np.full(40, np.nan), 0.075, rng)
    assert c.jobs == 40 and c.effective_jobs < curve_mod.MIN_EFFECTIVE_JOBS
    assert not c.enough and c.verdict == "too few" and c.full_share is None
    even = cell_of(("g",), 4, np.ones(40), some, some / 5, 0.075, rng)
    assert (
        even.enough
        and even.verdict == "under"
        and even.full_share == pytest.approx(float(np.mean(some / 5)))
    )


def test_the_interval_covers_a_known_mean_about_nine_times_in_ten():
    rng = np.random.default_rng(11)
    truth, covered = 0.1, 0
    for _ in range(200):
        w = rng.lognormal(0, 0.5, 60)
        s = rng.beta(2, 18, 60)  # mean 0.1
        c = cell_of(("g",), 2, w, s, np.full(60, np.nan), 0.075, rng)
        covered += c.some_low <= truth <= c.some_high
    # a percentile bootstrap of 60 jobs is a little narrow; far from 90% would be a fault
    assert 0.8 <= covered / 200 <= 0.97


def test_the_linearised_interval_of_large_cells_matches_the_bootstrap(monkeypatch):
    rng = np.random.default_rng(5)
    w = rng.lognormal(0, 1.0, 5000)
    s = rng.beta(2, 8, 5000)
    boot = cell_of(("g",), 2, w, s, np.full(5000, np.nan), 0.075, np.random.default_rng(1))
    monkeypatch.setattr(curve_mod, "EXACT_BOOTSTRAP_MAX", 100)
    lin = cell_of(("g",), 2, w, s, np.full(5000, np.nan), 0.075, np.random.default_rng(1))
    width = boot.some_high - boot.some_low
    assert lin.some_share == boot.some_share
    assert lin.some_low == pytest.approx(boot.some_low, abs=0.15 * width)
    assert lin.some_high == pytest.approx(boot.some_high, abs=0.15 * width)


@pytest.mark.parametrize(
    ("cells", "model", "answer", "low", "basis", "relation"),
    [
        # the knee bracketed: over at 2, under from 4: measurement decides, whatever the model
        ([(1, "over"), (2, "over"), (4, "under"), (8, "under")], 3, 4, 2, MEASURED, "agree"),
        ([(1, "over"), (2, "over"), (4, "under")], 6, 4, 2, MEASURED, "model asks more"),
        ([(1, "over"), (2, "over"), (4, "under")], 2, 4, 2, MEASURED, "model asks fewer"),
        # an unresolved cell between: the knee lies above the last count over
        ([(1, "over"), (2, "unresolved"), (4, "under")], 2, 4, 1, MEASURED, "agree"),
        # nothing measured enough below: the measured count suffices, fewer are unknown
        ([(2, "too few"), (8, "under")], 2, 8, None, MODEL, "not contradicted"),
        ([(2, "too few"), (3, "under")], 4, 3, None, MEASURED, "model asks more"),
        # a count under followed by one over above it is no answer there
        ([(2, "under"), (4, "over"), (8, "under")], 3, 8, 4, MEASURED, "model asks fewer"),
        # every enough cell over, or none enough: no measured answer
        ([(1, "over"), (2, "over")], 2, None, 2, MODEL, "model asks fewer"),
        ([(1, "too few"), (2, "too few")], 2, None, None, MODEL, None),
    ],
)
def test_the_measured_answer_and_what_decides(cells, model, answer, low, basis, relation):
    m = measured_answer([_cell(c, v) for c, v in cells], 0.075)
    assert (m.cores_per_gpu, m.bracket_low) == (answer, low)
    assert m.jobs == 50 * len(cells) and m.reason
    chosen, got_basis = decide_default(model, m)
    assert got_basis == basis and chosen == (answer if basis == MEASURED else model)
    assert agreement(model, m) == relation


def test_partitions_read_the_measurement_where_it_answers(jobs_db: Path, measured_db: Path):
    def rows(db: Path) -> list[dict]:
        done = _adv(db, "recommend", "--partition", "*", "--format", "json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["partitions"]

    model_only = {(r["cluster"], r["partition"], r["gpu_type"]): r for r in rows(jobs_db)}
    measured = rows(measured_db)
    assert all(r["basis"] == MODEL and r["measured_jobs"] == 0 for r in model_only.values())
    assert {r["basis"] for r in measured} == {MEASURED, MODEL}
    curve = pressure_curve(measured_db, CurveQuery(by=("cluster", "partition", "gpu_type",
                                                        "gpu_count")))  # fmt: skip
    for r in measured:
        base = model_only[(r["cluster"], r["partition"], r["gpu_type"])]
        # the model's answer is the same with or without pressure; the measured one is the curve's
        assert r["model_def_cpu_per_gpu"] == base["def_cpu_per_gpu"]
        cells = curve.groups[(r["cluster"], r["partition"], r["gpu_type"], r["typical_gpus"])]
        m = measured_answer(cells, curve.threshold)
        assert r["measured_def_cpu_per_gpu"] == m.cores_per_gpu
        assert r["measured_jobs"] == m.jobs == sum(c.jobs for c in cells)
        assert (r["def_cpu_per_gpu"], r["basis"]) == decide_default(base["def_cpu_per_gpu"], m)
        assert r["model_vs_measured"] == agreement(base["def_cpu_per_gpu"], m)


def test_pressure_curve_on_the_command_line(measured_db: Path):
    done = _adv(measured_db, "pressure", "curve", "--format", "json")
    assert done.returncode == 0, done.stderr
    rep = json.loads(done.stdout)
    implied = starved_psi_for(DEFAULT_MAX_WAIT, shipped_links())
    assert implied is not None and rep["threshold"] == pytest.approx(implied[0])
    assert rep["by"] == ["cluster", "partition", "gpu_type", "gpu_count"]
    cells = [c for g in rep["groups"] for c in g["cells"]]
    assert sum(c["jobs"] for c in cells) == sum(g["jobs_measured"] for g in rep["groups"])
    # the model's prediction beside every cell; compared where the cell is enough
    assert all(c["predicted"] is not None for c in cells)
    assert {c["model_vs_measured"] for c in cells if c["enough"]} <= {"within", "above", "below"}
    assert all(c["model_vs_measured"] is None for c in cells if not c["enough"])
    looser = json.loads(_adv(measured_db, "pressure", "curve", "--max-wait", "0.3", "-f",
                             "json").stdout)  # fmt: skip
    assert looser["threshold"] > rep["threshold"]
    table = _adv(measured_db, "pressure", "curve", "--cluster", "teaching")
    assert table.returncode == 0 and "groups measured enough" in table.stderr
    csv = _adv(measured_db, "pressure", "curve", "--by", "gpu_type", "-f", "csv")
    assert csv.returncode == 0 and csv.stdout.splitlines()[0].startswith("gpu_type,")
    bad = _adv(measured_db, "pressure", "curve", "--by", "nope")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--by nope" in bad.stderr


def test_a_database_without_pressure_has_an_empty_curve(jobs_db: Path):
    curve = pressure_curve(jobs_db, replace(CurveQuery(), threshold=0.1))
    assert curve.cells == () and curve.groups == {}


def test_the_loss_of_measured_jobs_is_their_own_stall_and_the_headline_says_how_much(
    jobs_db: Path, measured_db: Path
):
    from advisor.fixplan import FixQuery, fix_plan, plan_headline
    from advisor.store import connect

    def rows(db: Path) -> dict:
        done = _adv(db, "recommend", "--partition", "*", "--format", "json")
        assert done.returncode == 0, done.stderr
        return {(r["cluster"], r["partition"]): r for r in json.loads(done.stdout)["partitions"]}

    model_only, measured = rows(jobs_db), rows(measured_db)
    con = duckdb.connect(str(measured_db), read_only=True)
    try:
        by_group = dict(
            ((r[0], r[1]), r[2:])
            for r in con.execute(
                "SELECT cluster, partition, sum(gpus * elapsed_s) / 3600,"
                " sum(gpus * elapsed_s / 3600 * least(psi_full_s / psi_covered_s, 1)),"
                " sum(gpus * elapsed_s / 3600 * least(psi_some_s / psi_covered_s, 1))"
                " FROM jobs WHERE psi_status = 'measured' AND gpus > 0 AND cpus > 0"
                " AND elapsed_s > 0 AND start IS NOT NULL AND cpus / gpus < ? GROUP BY ALL",
                [2],  # every group's answer on the sample is 2 cores per GPU (checked below)
            ).fetchall()
        )
        measured_gh = dict(
            ((r[0], r[1]), r[2])
            for r in con.execute(
                "SELECT cluster, partition, sum(gpus * elapsed_s) / 3600 FROM jobs"
                " WHERE psi_status = 'measured' AND gpus > 0 AND cpus > 0 AND elapsed_s > 0"
                " AND start IS NOT NULL GROUP BY ALL"
            ).fetchall()
        )
    finally:
        con.close()
    for key, r in measured.items():
        base = model_only[key]
        assert r["def_cpu_per_gpu"] == 2
        assert r["gpu_hours_measured"] == pytest.approx(measured_gh[key], rel=1e-9)
        _, full, some = by_group[key]
        assert r["gpu_hours_lost_measured"] == pytest.approx([full, some], rel=1e-9)
        # the rest of the loss is the model's for the unmeasured jobs only: less than all of it
        assert r["gpu_hours_lost_model"] < base["gpu_hours_lost"]
        assert r["gpu_hours_lost"] == pytest.approx(r["gpu_hours_lost_model"] + some, rel=1e-9)
        lo, hi = r["gpu_hours_lost_interval"]
        assert lo <= r["gpu_hours_lost"] <= hi
        # the sample's stall comes from PSI; the model's loss from the TTFT bound: the flag says
        # where they part, and a warning carries it
        if r["loss_disagreement"]:
            assert r["loss_disagreement"] in r["warnings"]
    q = FixQuery(db=str(measured_db))
    plan = fix_plan(q)
    con = connect(measured_db, read_only=True)
    try:
        head = plan_headline(con, plan, q)
    finally:
        con.close()
    assert head.measured is not None
    share = sum(measured_gh.values()) / sum(r["gpu_hours"] for r in measured.values())
    # per month, each row over its own span (12.01-12.02 months on the sample)
    assert head.measured.share_gpu_hours_measured == pytest.approx(share, rel=1e-4)
    words = head.measured_words()
    assert f"{share:.0%} of the GPU time {head.period}" in words
    assert "rests on the model alone" not in head.usage_words()
    plain = fix_plan(FixQuery(db=str(jobs_db)))
    assert plain.measured_evidence().share_gpu_hours_measured == 0
    # nothing measured: nothing said beside the usage sentence ("rests on the model alone")
    assert plain.measured_evidence().words("per month") == ""


def test_the_report_shows_the_measured_answer_beside_the_models(tmp_path: Path, measured_db: Path):
    import re

    done = _adv(measured_db, "report", "--month", "2024-12", "--out", str(tmp_path / "rep"))
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "rep" / "2024-12" / "report.html").read_text()
    got = dict(re.findall(r'data-key="measured_vs_model\.(\d+\.basis)" data-value="([^"]*)"', html))
    rows = json.loads(
        _adv(measured_db, "recommend", "--partition", "*", "--format", "json").stdout
    )["partitions"]
    # the report's recommendations pool the clusters: every group with measured jobs is a row
    assert len(got) >= 1 and set(got.values()) <= {MEASURED, MODEL}
    assert MEASURED in got.values() and {r["basis"] for r in rows} == {MEASURED, MODEL}


def test_a_disagreement_is_said_with_ranges_that_round_apart_and_one_number_where_they_do_not():
    from advisor.recommend.measured import disagreement

    assert disagreement((203.2, 203.4), (25.0, 139.0), 500.0) == (
        "the model puts 203 GPU-h of loss on the measured jobs, above the 25-139 GPU-h their "
        "own CPU pressure held"
    )
    assert "below the 80-120 GPU-h" in (disagreement((10.0, 40.0), (80.0, 120.0), 500.0) or "")
    assert disagreement((50.0, 90.0), (80.0, 120.0), 500.0) is None  # they overlap
    assert disagreement((500.0, 600.0), (0.0, 1.0), 0.0) is None  # nothing was measured
