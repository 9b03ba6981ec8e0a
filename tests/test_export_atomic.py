"""A re-export killed at any point (SIGKILL to a real ``advisor export parquet`` process) leaves
the Parquet dataset as it was before or as it is after, whole and readable, never broken; the
next export cleans up after it. Real DuckDB files, real processes, real Parquet files."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from advisor import store
from tests.test_export_parquet import _load

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ADVISOR_DB"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _export(db: Path, out: Path) -> subprocess.Popen[bytes]:
    """A real export process; its stderr goes to ``export.err`` beside the dataset."""
    with open(out.parent / "export.err", "ab") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "advisor", "export", "parquet", str(out), "--db", str(db)],
            env=_env(),
            cwd=ROOT,  # `python -m` looks in the working folder first
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


@pytest.fixture(scope="module")
def two_databases(tmp_path_factory) -> tuple[Path, Path]:
    """The sample (old) and a changed copy (new): one month of teaching gone, research's GPU jobs
    with twice the CPUs, and no node inventory, so every table differs between the two."""
    base = tmp_path_factory.mktemp("atomic")
    old = _load(base / "old.duckdb")
    new = base / "new.duckdb"
    shutil.copy2(old, new)
    con = store.connect(new)
    con.execute(
        "DELETE FROM jobs WHERE cluster = 'teaching' AND strftime(coalesce(start, submit), "
        "'%Y-%m') = '2024-03'"
    )
    con.execute("UPDATE jobs SET cpus = cpus * 2 WHERE cluster = 'research' AND gpus > 0")
    con.execute("DELETE FROM nodes")
    con.close()
    return old, new


def _state(cli, *source: str) -> dict[str, object]:
    """What a reader gets: the ratios by every summary key and the exclusions; from a dataset
    also the rows of the node inventory and of the derived summary (every file read whole)."""
    code, out, err = cli(
        "ratios", "--by", "cluster,partition,gpu_type,month", "--format", "json", *source
    )
    assert code == 0, err
    code, excluded, err = cli("ratios", "--excluded", "--format", "json", *source)
    assert code == 0, err
    state: dict[str, object] = {"ratios": json.loads(out), "excluded": json.loads(excluded)}
    if source[0] == "--parquet":
        for table in ("nodes", "ratios"):
            files = [str(f) for f in sorted((Path(source[1]) / table).rglob("*.parquet"))]
            row = (
                duckdb.execute("SELECT count(*) FROM read_parquet($f)", {"f": files}).fetchone()
                if files
                else (0,)
            )
            state[f"{table}_rows"] = int(row[0]) if row else 0
    return state


def _expected(cli, db: Path) -> dict[str, object]:
    state = _state(cli, "--db", str(db))
    con = store.connect(db, read_only=True)
    row = con.execute("SELECT count(*) FROM nodes").fetchone()
    con.close()
    state["nodes_rows"] = int(row[0]) if row else 0
    state["ratios_rows"] = len(state["ratios"])  # type: ignore[arg-type]
    return state


def _version_dirs(out: Path) -> set[str]:
    meta = out / ".advisor"
    if not meta.is_dir():
        return set()
    return {p.name for p in meta.iterdir() if p.is_dir() and not p.is_symlink()}


def _wait_for(proc: subprocess.Popen[bytes], ready: Callable[[], bool], limit_s: float) -> None:
    """Poll until ``ready()`` or the process ends."""
    deadline = time.monotonic() + limit_s
    while proc.poll() is None and time.monotonic() < deadline and not ready():
        time.sleep(0.0005)


def test_a_killed_re_export_leaves_the_old_or_the_new_dataset_whole(cli, two_databases, tmp_path):
    old, new = two_databases
    out = tmp_path / "dataset"
    want = {"old": _expected(cli, old), "new": _expected(cli, new)}
    assert want["old"]["ratios"] != want["new"]["ratios"]
    assert want["old"]["nodes_rows"] > 0 and want["new"]["nodes_rows"] == 0  # type: ignore[operator]

    def shown(when: str = "") -> str:
        got = _state(cli, "--parquet", str(out))
        matches = [name for name, w in want.items() if got == w]
        assert len(matches) == 1, f"{when}: the dataset is neither the old nor the new one"
        return matches[0]

    # A whole first export, timed from the process's start to its end.
    t0 = time.monotonic()
    proc = _export(old, out)
    assert proc.wait(timeout=300) == 0, (tmp_path / "export.err").read_text()
    whole_s = time.monotonic() - t0
    assert shown() == "old"

    def current() -> str:
        link = out / ".advisor" / "current"
        return os.readlink(link) if link.is_symlink() else ""

    # Kill points: as soon as the version folder exists, at the first jobs file, when the
    # summary's folder appears, right after the swap; then spread over the later part of the
    # process's time (the first part is Python starting), whatever the export does then.
    watched: list[tuple[str, Callable[[set[str], str], Callable[[], bool]]]] = [
        ("version folder", lambda before, cur: lambda: bool(_version_dirs(out) - before)),
        (
            "first jobs file",
            lambda before, cur: (
                lambda: any(
                    any((out / ".advisor" / v / "jobs").rglob("*.parquet"))
                    for v in _version_dirs(out) - before
                )
            ),
        ),
        (
            "summary folder",
            lambda before, cur: (
                lambda: any(
                    (out / ".advisor" / v / "ratios").exists() for v in _version_dirs(out) - before
                )
            ),
        ),
        ("after the swap", lambda before, cur: lambda: current() not in ("", cur)),
    ]
    points: list[tuple[str, Callable[[set[str], str], Callable[[], bool]] | float]] = [
        *watched,
        *((f"{f:.0%} of the export", f) for f in (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.97)),
    ]
    seen: dict[str, int] = {"old": 0, "new": 0}
    killed = 0
    state = "old"
    for label, point in points:
        target = "new" if state == "old" else "old"
        before, cur = _version_dirs(out), current()
        t0 = time.monotonic()
        proc = _export(new if target == "new" else old, out)
        if isinstance(point, float):
            try:
                proc.wait(timeout=max(whole_s * point - (time.monotonic() - t0), 0.001))
                # it outran the point (the machine got quieter since whole_s was measured):
                # the later points are timed from this run's own length
                whole_s = time.monotonic() - t0
            except subprocess.TimeoutExpired:
                pass
        else:
            _wait_for(proc, point(before, cur), 120)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait(timeout=60)
        state = shown(f"killed at {label}")
        seen[state] += 1
    # Most points stopped an export part-way; on a loaded machine an export can outrun a timed
    # point (its duration was measured once), which is why not every one must.
    assert killed >= len(points) // 2 + 1
    assert seen["old"] > 0 and seen["new"] > 0  # kills landed before and after the swap

    # The next export finishes, shows the new dataset and leaves one version behind.
    proc = _export(new, out)
    assert proc.wait(timeout=300) == 0, (tmp_path / "export.err").read_text()
    assert shown() == "new"
    assert len(_version_dirs(out)) == 1
    assert sorted(p.name for p in (out / ".advisor").iterdir()) == [
        current(),
        "current",
        "lock",
    ]


def test_a_dataset_written_before_versions_is_converted_on_its_next_export(
    cli, two_databases, tmp_path
):
    from advisor.export import ExportConfig, export_parquet

    old, new = two_databases
    out = tmp_path / "dataset"
    export_parquet(ExportConfig(out_dir=out, db=old))
    # The layout of an earlier advisor: plain table folders, no .advisor/.
    for table in ("jobs", "nodes", "ratios"):
        real = (out / table).resolve()
        (out / table).unlink()
        shutil.copytree(real, out / table)
    shutil.rmtree(out / ".advisor")
    assert _state(cli, "--parquet", str(out)) == _expected(cli, old)

    export_parquet(ExportConfig(out_dir=out, db=new))
    assert _state(cli, "--parquet", str(out)) == _expected(cli, new)
    assert all((out / t).is_symlink() for t in ("jobs", "ratios"))
    assert not (out / "nodes").exists()  # the new database has no node inventory
    assert sorted(p.name for p in (out / ".advisor").iterdir())[1:] == ["current", "lock"]
