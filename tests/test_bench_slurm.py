"""``bench sweep --submit`` against the real one-host Slurm sandbox (scripts/slurm-sandbox):
each array task runs the real ``advisor bench run`` inside its allocation, with the stub
engine (a real server process; there is no GPU here, the sandbox's GPUs are fake gres)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.harness.results.collect import collect, list_runs
from advisor.harness.sweep import SweepConfig, make_sweep

ROOT = Path(__file__).resolve().parent.parent
SANDBOX_CONF = ROOT / ".slurm-sandbox" / "etc" / "slurm.conf"

pytestmark = pytest.mark.slurm


def _sandbox_up() -> bool:
    if not SANDBOX_CONF.exists() or shutil.which("sinfo") is None:
        return False
    env = {**os.environ, "SLURM_CONF": str(SANDBOX_CONF)}
    try:
        return (
            subprocess.run(["sinfo", "-h"], env=env, capture_output=True, timeout=20).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        return False


@pytest.fixture
def sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    if not _sandbox_up():
        pytest.skip("LOUD SKIP: the Slurm sandbox is not running (scripts/slurm-sandbox start)")
    monkeypatch.setenv("SLURM_CONF", str(SANDBOX_CONF))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def test_a_submitted_sweep_runs_one_bench_per_core_count_inside_slurm(
    sandbox: None, tmp_path: Path, db_path: Path
):
    from advisor.harness.load.modeldir import MakeModelConfig, make_model

    model = tmp_path / "model"
    make_model(MakeModelConfig("tiny", model))
    out = tmp_path / "sweep"
    run_args = (
        f"--engine stub --attacker-rps 2 --attacker-tokens 20:40 --victim-rps 2 "
        f"--duration 1 --timeout 5 --repeats 1 --no-tokenize-probe "
        f"--engine-env PYTHONPATH={ROOT}"
    )
    result = make_sweep(
        SweepConfig(
            model=str(model),
            cores=(1, 2),
            out_dir=out,
            gpus=1,
            gpu_type="h100",
            partition="gpu",
            client_cores=1,
            time_limit="00:05:00",
            run_args=run_args,
            advisor_cmd=f"{sys.executable} -m advisor",
            submit=True,
        )
    )
    assert len(result.job_ids) == 2 and all(j.isdigit() for j in result.job_ids)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        q = subprocess.run(
            ["squeue", "-h", "-j", ",".join(result.job_ids)], capture_output=True, text=True
        )
        if not q.stdout.strip():
            break
        time.sleep(2)
    logs = "\n".join(p.read_text() for p in (out / "logs").glob("*.out"))
    files = sorted((out / "results").glob("*.json"))
    assert len(files) == 2, logs
    collected = collect([out / "results"], db_path)
    assert collected.problems == ()
    runs = list_runs(db_path)
    assert sorted(r["cores"] for r in runs) == [1, 2]
    # each run recorded where Slurm ran it (SLURM_CLUSTER_NAME, SLURM_JOB_PARTITION)
    assert {(r["cluster"], r["partition"]) for r in runs} == {("advisor-sandbox", "gpu")}, logs
    assert all(r["status"] == "ok" for r in runs), logs
    assert "engine cores of 2 allocated" in logs and "engine cores of 3 allocated" in logs
