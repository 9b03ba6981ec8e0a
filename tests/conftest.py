"""Shared fixtures: a real DuckDB file in a temp dir, and the CLI runner; and the groups that
keep the tests of one shared real part on one worker when pytest-xdist runs the suite."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.faultmatrix"]

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"


# Tests of one real part that is shared for the whole run (the one Slurm sandbox and its
# submitted job mix, one JVM for Spark) run on one worker, in order, under `--dist loadgroup`.
_SHARED_PARTS = ("slurm", "spark")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for part in _SHARED_PARTS:
            if item.get_closest_marker(part):
                item.add_marker(pytest.mark.xdist_group(part))
                break


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A path for a fresh DuckDB file (not yet created)."""
    return tmp_path / "advisor.duckdb"


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch):
    """Run the advisor CLI in-process: returns (exit code, stdout, stderr)."""
    import sys

    from advisor.cli import app
    from advisor.cli._output import run_guarded

    def invoke(*args: str) -> tuple[int, str, str]:
        import io

        out, err = io.StringIO(), io.StringIO()
        # output to a StringIO is piped output: with no COLUMNS (pytest-xdist's workers set
        # it to 80) a table keeps its natural width, as `advisor ... | less` shows it
        monkeypatch.delenv("COLUMNS", raising=False)
        monkeypatch.setattr(sys, "argv", ["advisor", *args])
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        code = run_guarded(app)
        monkeypatch.undo()
        return code, out.getvalue(), err.getvalue()

    return invoke
