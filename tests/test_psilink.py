"""The measured link between a job's CPU pressure and the engine's wait (issue 49, item 1):
the fit recovers a known line, reads the shipped bench phases, and sets --starved-psi."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from advisor.harness.results.collect import calibration_points
from advisor.model.calibration.points import read_csv
from advisor.model.calibration.waits import link_cells
from advisor.model.psilink import (
    MIN_WAIT,
    STARVED_PSI_DEFAULT,
    LinkCell,
    best_link,
    fit_link,
    fit_links,
    shipped_links,
    starved_psi_for,
)
from advisor.model.waitknee import DEFAULT_MAX_WAIT
from tests.bench_fixtures import unpack

ROOT = Path(__file__).resolve().parent.parent


def _cells(a: float, b: float, *, series: int = 5, noise: float = 0.05, seed: int = 1):
    rng = np.random.default_rng(seed)
    out = []
    for s in range(series):
        for cores, wait in zip((2, 3, 4, 6, 14), (0.4, 0.15, 0.04, 0.003, 0.0), strict=True):
            w = wait * (1 + 0.2 * s)
            psi = math.exp(a + b * math.log(max(w, 1e-9)) + rng.normal(0, noise)) if w else 0.001
            out.append(LinkCell(f"s{s}", "mp", cores, {"engine_core": w, "api_server": w / 3},
                                {"machine/some": min(psi, 1.0)}))  # fmt: skip
    return out


def test_the_fit_recovers_a_known_line_and_its_interval_covers_it():
    cells = _cells(-0.7, 1.1)
    link = fit_link(cells, "engine_core", "mp", "machine", "some")
    assert link is not None
    assert link.a == pytest.approx(-0.7, abs=0.1) and link.b == pytest.approx(1.1, abs=0.08)
    mid, low, high = link.psi_at(0.15)
    truth = math.exp(-0.7 + 1.1 * math.log(0.15))
    assert low <= truth <= high and low < mid < high
    # the inverse reads the same line back
    assert link.wait_at(mid) == pytest.approx(0.15, rel=1e-9)
    # the worse role is the engine core here (the API server waits a third of it)
    worst = fit_link(cells, "worst", "mp", "machine", "some")
    assert worst is not None and worst.a == pytest.approx(link.a)


def test_phases_below_the_wait_floor_and_too_few_series_fit_nothing():
    cells = _cells(-0.7, 1.1)
    link = fit_link(cells, "engine_core", "mp", "machine", "some")
    assert link is not None
    # 14 and 6 cores (wait 0 and 0.003-0.005) sit below MIN_WAIT: three of five phases a series
    assert link.cells == sum(1 for c in cells if c.wait["engine_core"] >= MIN_WAIT) == 15
    assert fit_link(_cells(-0.7, 1.1, series=1), "engine_core", "mp", "machine", "some") is None
    # an executor or scope no phase measured has no link
    assert fit_link(cells, "engine_core", "uni", "machine", "some") is None
    assert fit_link(cells, "engine_core", "mp", "cgroup", "some") is None


def test_the_shipped_bench_phases_link_pressure_to_the_wait():
    points = []
    for f in (
        "h100-vllm-0.26.0-2026-12-06-wait.csv",
        "h200-vllm-0.26.0-2026-12-07-wait.csv",
        "h100-vllm-0.26.0-2026-12-07-psi.csv",
    ):
        loaded = read_csv(ROOT / "data" / "calibration" / f)
        points += list(loaded[0] if isinstance(loaded, tuple) else loaded)
    cells = link_cells(points)
    assert {c.executor for c in cells} == {"mp", "uni"}
    links = fit_links(cells)
    # the engine's own cgroup (the 2026-12-07 H100 run) is preferred where measured
    mp = best_link(links, "worst", "mp")
    machine = links["worst/mp/machine/some"]
    assert mp is not None and mp.scope == "cgroup" and mp.series == 3
    # pressure rises with the wait, about in proportion, and below it (PSI is one stall
    # flag per wall second, the wait sums every waiting thread)
    assert 0.8 < mp.b < 1.25
    assert 0.3 < mp.psi_at(0.15)[0] / 0.15 < 0.7
    # and the cgroup's line is the machine's: what the collector reads is what the bench fitted
    assert abs(mp.psi_at(0.15)[0] - machine.psi_at(0.15)[0]) < 0.005
    # a busy-waiting worker always runs: the cgroup's full share stays near zero
    full = links["worst/mp/cgroup/full"]
    assert full.psi_at(0.4)[0] < 0.005 and full.b < 0
    # the fit stored with the shipped model is this one
    assert shipped_links()[mp.key].a == pytest.approx(mp.a, abs=1e-9)


def test_the_starved_psi_default_is_the_max_wait_default_through_the_shipped_link():
    implied = starved_psi_for(DEFAULT_MAX_WAIT, shipped_links())
    assert implied is not None
    mid, low, high = implied
    assert round(mid, 3) == STARVED_PSI_DEFAULT
    assert low <= STARVED_PSI_DEFAULT <= high
    from advisor.derived.usage_months import UsageThresholds

    assert UsageThresholds().starved_psi_some == STARVED_PSI_DEFAULT


def test_collect_writes_the_engine_cgroups_pressure_where_the_bench_made_one(tmp_path):
    unpack(ROOT / "data/bench/h200-2026-12-07-wait/h200w-mp-uni-unique.tgz", tmp_path)
    path = next((tmp_path / "run1").glob("*_c2_xmp_tokenize-heavy_a5_*_r1.json"))
    run = json.loads(path.read_text())["run"]
    assert not [p for p in calibration_points(run, path.name) if "cgroup" in p["metric"]]
    run["extra"]["wait"]["psi"]["cgroup"] = {
        "some_s": 1.2, "some_share": 0.3, "full_s": 0.4, "full_share": 0.1,
    }  # fmt: skip
    got = {p["metric"]: p["value"] for p in calibration_points(run, path.name)}
    assert got["psi_cgroup_some_share"] == 0.3 and got["psi_cgroup_full_share"] == 0.1
    assert got["psi_cpu_some_share"] == pytest.approx(
        run["extra"]["wait"]["psi"]["machine"]["some_share"]
    )
    # the GPUs' busy share rides along (what the engine core's CPU follows, docs/model.md)
    assert got["gpu_busy_share"] == pytest.approx(run["gpu_util_percent"] / 100)
    run["gpu_util_percent"] = 250.0  # a malformed reading is clipped to the share's range
    assert {p["metric"]: p["value"] for p in calibration_points(run, path.name)}[
        "gpu_busy_share"
    ] == 1.0


def test_pressure_link_reports_the_threshold_a_max_wait_implies(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "advisor", "pressure", "link", "--max-wait", "0.3", "-f", "json"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rep = json.loads(done.stdout)
    link = shipped_links()[rep["basis"]]
    assert rep["starved_psi"] == pytest.approx(link.psi_at(0.3)[0])
    assert rep["starved_psi"] > STARVED_PSI_DEFAULT  # a looser wait, a looser pressure
    assert {r["link"] for r in rep["links"]} == set(shipped_links())
    bad = subprocess.run(
        [sys.executable, "-m", "advisor", "pressure", "link", "--max-wait", "1.5"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--max-wait" in bad.stderr
