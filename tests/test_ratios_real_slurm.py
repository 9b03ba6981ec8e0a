"""Ratios on real Slurm 22.05 output (captured by the Slurm sandbox into data/sample/slurm/):
every figure equals what the submitted jobs imply (expected.json), computed independently."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from advisor import ratios, store
from advisor.ratios import RatioQuery, Weight

REAL = Path(__file__).resolve().parent.parent / "data" / "sample" / "slurm"


@pytest.fixture(scope="module")
def real():
    if not (REAL / "expected.json").exists():
        pytest.skip(f"SKIPPED LOUDLY: the real Slurm captures under {REAL} are missing")
    ingest = pytest.importorskip("advisor.ingest", reason="SKIPPED LOUDLY: no advisor.ingest")
    return ingest, json.loads((REAL / "expected.json").read_text())


@pytest.mark.parametrize("capture", ["sacct-P-wide.txt", "sacct.json"])
def test_ratios_of_real_sacct_output_equal_the_submitted_jobs(real, capture, tmp_path):
    ingest, expected = real
    con = store.connect(tmp_path / "advisor.duckdb")
    ingest.ingest_files(con, [REAL / capture])
    counted = [
        j["expected"]
        for j in expected["jobs"]
        if j["expected"].get("started") and j["expected"]["gpus"] > 0 and j["expected"]["cpus"] > 0
    ]
    assert counted, "the capture should hold GPU jobs"
    report = ratios.ratio_summary(con, RatioQuery(by=("gpu_type",)))
    got = {g.keys["gpu_type"]: g for g in report.groups}
    for gpu_type in {e["gpu_type"] for e in counted}:
        x = np.array([e["cpus"] / e["gpus"] for e in counted if e["gpu_type"] == gpu_type])
        g = got[gpu_type]
        assert g.jobs == len(x), gpu_type
        assert [g.p25_cores_per_gpu, g.p50_cores_per_gpu] == pytest.approx(
            np.percentile(x, [25, 50]), rel=1e-12
        )
        assert g.share_jobs_below[1.0] == pytest.approx(np.mean(x < 1))
    not_counted = len(expected["jobs"]) - len(counted)
    assert report.excluded_jobs == not_counted
    # the cube gives the same, and GPU-hour weighting works on real (short) jobs too
    cube = ratios.ratio_summary(con, RatioQuery(by=("gpu_type",)), use_cube=True)
    assert len(cube.groups) == len(report.groups)
    for a, b in zip(cube.groups, report.groups, strict=True):
        # NaN where no GPU-seconds weigh (these jobs ran 0 s): equal as "not a number"
        assert a.as_row() == pytest.approx(b.as_row(), nan_ok=True)
    ratios.ratio_summary(con, RatioQuery(by=("cluster",), weight=Weight.gpu_hours))
    con.close()
