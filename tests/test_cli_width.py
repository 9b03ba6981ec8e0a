"""What a person sees in a terminal (issue 39 item 3): the installed console script at
COLUMNS=80 and 120 (piped, as a terminal of that width is told by COLUMNS) on the shipped sample
in a real DuckDB file. Every line fits; a record too wide for the width becomes a key/value
block; a wide table keeps its first columns whole and says which it left out; no number is cut.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

ROOT = Path(__file__).resolve().parent.parent
ADVISOR = shutil.which("advisor") or str(Path(sys.executable).parent / "advisor")
SAMPLE = ROOT / "data" / "sample" / "sacct-synth.txt.gz"


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("width") / "sample.duckdb"
    done = subprocess.run([ADVISOR, "ingest", str(SAMPLE), "--db", str(db)], capture_output=True)
    assert done.returncode == 0, done.stderr
    return db


def _run(width: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(width)}
    return subprocess.run([ADVISOR, *args], capture_output=True, text=True, env=env)


def _fits(text: str, width: int) -> None:
    long = [line for line in text.splitlines() if cell_len(line) > width]
    assert not long, long[:3]


@pytest.mark.parametrize("width", [80, 120])
def test_recommend_for_a_job_is_the_answer_then_a_key_value_block(sample_db: Path, width: int):
    done = _run(width, "recommend", "--gpu-type", "H100", "--gpus", "4", "--db", str(sample_db))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    _fits(done.stdout, width)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("--cpus-per-gpu=") and "cores for 4 GPUs" in lines[0]
    # one field a line, its value whole: the flag is not cut into "--c/pus/-pe/r-g/pu=/2"
    (flag,) = [line for line in lines if "│ recommended " in line]
    assert re.search(r"│ --cpus-per-gpu=\d+ +│", flag), flag
    assert any("│ slowdown_bound_from_wait " in line for line in lines)


@pytest.mark.parametrize("width", [80, 120])
def test_ratios_keep_their_numbers_whole_and_name_the_columns_left_out(sample_db: Path, width):
    done = _run(width, "ratios", "--db", str(sample_db))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    _fits(done.stdout, width)
    rows = [line for line in done.stdout.splitlines() if line.startswith("│ H100")]
    assert len(rows) == 1 and re.search(r"│ \d{1,3}(,\d{3})+ +│", rows[0]), rows
    if width == 80:
        assert "more columns do not fit 80 columns" in done.stderr
    piped = subprocess.run(
        [ADVISOR, "ratios", "--db", str(sample_db)],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )
    # piped with no width told: the whole table at its natural width, for a pager
    assert "more columns" not in piped.stderr and "<8" in piped.stdout


@pytest.mark.parametrize("width", [80, 120])
def test_partition_recommendations_show_the_answer_first_not_an_empty_grid(sample_db, width):
    done = _run(width, "recommend", "--partition", "*", "--db", str(sample_db))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    _fits(done.stdout, width)
    header = next(line for line in done.stdout.splitlines() if line.startswith("┃"))
    # the answer, then what decided it (issue 49: the measured curve or the model)
    assert re.search(r"partition .*gpu_type .*DefCpuPerGPU .*basis", header), header
    assert sum(line.startswith("│ ") for line in done.stdout.splitlines()) == 5
    assert "True" not in done.stdout and "False" not in done.stdout and "[" not in done.stdout


def test_report_for_a_month_without_data_fails_in_one_line_naming_the_months_held(
    sample_db: Path, tmp_path: Path
):
    """Issue 39 item 5: `advisor report --month last` on old data wrote an empty report, exit 0,
    and printed nothing."""
    done = _run(120, "report", "--month", "2023-06", "--out", str(tmp_path), "--db", str(sample_db))
    assert done.returncode == 4 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("Error: no GPU allocations in 2023-06: the database holds 2024-01 to ")
    assert not list(tmp_path.rglob("*.html"))


def test_bench_curve_shows_what_decides_first_and_says_the_bracket(tmp_path: Path):
    """Issue 50 items 7-8: at 120 columns `bench curve` dropped all 16 wait columns and kept
    the TTFT detail; `--evidence` promised a bracket only its JSON had. Now the wait knee and
    each role's wait with its interval come first, and the bracket is a sentence."""
    from tests.bench_fixtures import unpack

    unpack(ROOT / "data" / "bench" / "h100-2026-12-08-renderer" / "rw2-mp.tgz", tmp_path)
    runs = str(tmp_path / "rw2-mp")
    done = _run(120, "bench", "curve", runs)
    assert done.returncode == 0, done.stderr
    _fits(done.stdout, 120)
    header = next(line for line in done.stdout.splitlines() if "curve" in line and "┃" in line)
    assert [h.strip() for h in header.split("┃")[1:6]] == [
        "curve",
        "cores",
        "wait knee",
        "engine core wait",
        "API server wait",
    ]
    (at3,) = [line for line in done.stdout.splitlines() if re.search(r"│ 3 +│", line)]
    assert re.search(r"│ 4 +│ 0\.193 \[0\.17\d-0\.2\d*\] +│ 0\.17 \[", at3), at3
    evidence = _run(120, "bench", "curve", runs, "--evidence")
    assert evidence.returncode == 0, evidence.stderr
    _fits(evidence.stdout, 120)
    text = " ".join(evidence.stdout.split())
    assert "The wait threshold lies between the largest wait with TTFT" in text
    assert "0.57 (engine core, tp1 mp rw2 tokenize-heavy 6/s (light), 2 cores)" in text
    assert "TTFT" in evidence.stdout.splitlines()[2] and "ITL" in evidence.stdout.splitlines()[2]
