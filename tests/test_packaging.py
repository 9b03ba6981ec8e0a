"""advisor as a real package: the wheel carries data/ and app/, and a fresh venv runs it.

The slow test builds the wheel from a copy of the checkout (so no build/ is left here), installs
it into a new virtual environment without system site-packages, and runs the main commands from
a folder outside the checkout, with PYTHONPATH cleared so that nothing of the checkout is seen.
The dependencies come from the package index pip is configured with (CI has the registry): pip's
own cache keeps HTTP responses, not wheel files that ``--no-index --find-links`` could use.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest
from setuptools import find_packages

from tests.job_submit import job_submit_args

ROOT = Path(__file__).resolve().parent.parent


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_wheel_lists_every_package_of_the_source_tree_and_maps_data_and_app():
    setuptools_cfg = _pyproject()["tool"]["setuptools"]
    listed = set(setuptools_cfg["packages"])
    in_tree = set(find_packages(str(ROOT), include=["advisor", "advisor.*"]))
    assert in_tree - listed == set(), "add these packages to [tool.setuptools] packages"
    mapped = setuptools_cfg["package-dir"]
    assert mapped["advisor._shipped"] == "data"
    assert mapped["advisor._dashboard.app"] == "app"
    for name in listed - in_tree:
        assert name in mapped, f"{name} is listed but neither in advisor/ nor mapped"
        assert (ROOT / mapped[name]).is_dir()


def test_the_bench_extra_carries_the_tokenizer_library_and_dev_includes_it():
    extras = _pyproject()["project"]["optional-dependencies"]
    assert any(req.startswith("tokenizers") for req in extras["bench"])
    assert "advisor[bench]" in extras["dev"]
    assert "serve" in extras


def test_a_missing_optional_library_is_an_error_naming_the_extra_not_a_traceback(tmp_path):
    # `sys.modules[name] = None` makes Python's own import raise ModuleNotFoundError, as it does
    # in an install without the extra (the slow test below sees the real absence).
    code = (
        "import sys; sys.modules['tokenizers'] = None; "
        "sys.argv = ['advisor', 'bench', 'make-model', '--arch', 'tiny', '--out', sys.argv[1]]; "
        "from advisor.cli import main; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "m")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.startswith("Error: ")
    assert "pip install 'advisor[bench]'" in proc.stderr
    assert "Traceback" not in proc.stderr


def _copy_source(dest: Path) -> Path:
    """What the wheel is built from: pyproject, README, the package, app/ and data/."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.duckdb*")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("advisor", "app", "data/calibration", "data/pricing", "data/sample"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    return dest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_a_wheel_in_a_fresh_venv_ingests_reports_recommends_and_serves_the_dashboard(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _copy_source(src)
    wheels = tmp_path / "wheels"
    # Built as `pip install .` builds it: in isolation, with the build-system's setuptools.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(src)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("advisor-*.whl")
    # Nothing of the checkout may be seen from the venv: no PYTHONPATH, no ADVISOR_* setting.
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("ADVISOR_")
    }
    env["ADVISOR_DB"] = str(work / "advisor.duckdb")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env, timeout=120)
    py, advisor = venv / "bin" / "python", venv / "bin" / "advisor"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=600,
    )

    def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(advisor), *args], cwd=work, env=env, capture_output=True, text=True, timeout=300
        )
        if ok:
            assert proc.returncode == 0, (args, proc.stderr)
        return proc

    def venv_python(code: str) -> str:
        return subprocess.run(
            [str(py), "-c", code],
            cwd=work,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout.strip()

    # The shipped files are found inside the installed package, not in the checkout.
    sample = Path(
        venv_python(
            "from advisor.resources import shipped_data; "
            "print(shipped_data('sample', 'sacct-synth.txt.gz'))"
        )
    )
    assert sample.is_file() and venv in sample.parents

    run("ingest", str(sample))
    groups = json.loads(run("ratios", "--by", "cluster,gpu_type", "--format", "json").stdout)
    by = {(g["cluster"], g["gpu_type"]): g for g in groups}
    assert by[("teaching", "H100")]["p25"] == 0.25  # the research's teaching-cluster H100 P25
    assert by[("teaching", "H100")]["p50"] == 1.0
    assert set(by) == {
        ("research", "A100"),
        ("research", "H100"),
        ("research", "L40S"),
        ("teaching", "A100"),
        ("teaching", "H100"),
    }

    points = json.loads(run("calibration", "list", "--format", "json").stdout)
    assert any(p["origin"].startswith(str(venv)) and "published.csv" in p["origin"] for p in points)

    rec = json.loads(run(*job_submit_args()).stdout)
    assert rec["cpus_per_gpu"] >= 1 and rec["usd_per_vcpu_hour"] > 0  # the shipped price table

    # The Parquet round trip and the metrics use SQL files and a dependency of their own.
    run("export", "parquet", "dataset")
    by_parquet = run(
        "ratios", "--by", "cluster,gpu_type", "--parquet", "dataset", "--format", "json"
    )
    assert json.loads(by_parquet.stdout) == groups
    prom = run("metrics", "--month", "2024-06").stdout
    assert (
        'advisor_cores_per_gpu_p25{cluster="teaching",gpu_type="H100",partition="gpu-h100"} 0.25'
        in prom
    )

    run("report", "--month", "2024-06", "--out", "reports")
    html = (work / "reports" / "2024-06" / "report.html").read_text(encoding="utf-8")
    assert "H100" in html

    # Without the bench extra, make-model names the extra instead of a traceback.
    proc = run("bench", "make-model", "--arch", "tiny", "--out", "m", ok=False)
    assert proc.returncode == 5 and "pip install 'advisor[bench]'" in proc.stderr
    assert "Traceback" not in proc.stderr

    # The dashboard: the real server answers its health check, and the app renders.
    port = _free_port()
    server = subprocess.Popen(
        [str(advisor), "dashboard", "--port", str(port)],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        body, deadline = None, time.monotonic() + 90
        while body is None and time.monotonic() < deadline and server.poll() is None:
            try:
                url = f"http://127.0.0.1:{port}/_stcore/health"
                with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 (loopback)
                    body = resp.read().decode()
            except OSError:
                time.sleep(0.5)
        assert body == "ok", server.stderr.read().decode() if server.poll() is not None else ""
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    rendered = venv_python(
        "from streamlit.testing.v1 import AppTest\n"
        "from advisor.resources import dashboard_dir\n"
        "at = AppTest.from_file(str(dashboard_dir() / 'streamlit_app.py'), default_timeout=120)\n"
        "at.run()\n"
        "print(len(at.exception), len(at.get('vega_lite_chart')), dashboard_dir())\n"
    )
    exceptions, charts, app_dir = rendered.split(" ", 2)
    assert exceptions == "0" and int(charts) >= 1
    assert venv in Path(app_dir).parents
