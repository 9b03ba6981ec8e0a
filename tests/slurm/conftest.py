"""Fixtures of the real-Slurm tests, and the loud skip when the sandbox is not there.

Tests marked ``slurm`` need the one-host cluster of ``scripts/slurm-sandbox start`` (root,
Debian's slurm packages). When it is not running they are skipped with the reason, and the end
of the run says in capitals that the real-Slurm tests did not run, so a green run without
them can never be mistaken for one with them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.slurm import jobset

SKIP_REASON = "REAL SLURM NOT AVAILABLE"


def sandbox_problem() -> str | None:
    """Why the sandbox cannot be used, or None when it answers."""
    if os.geteuid() != 0:
        return "not root (the sandbox and its jobs as several Unix users need root)"
    missing = [
        p for p in ("sbatch", "sacct", "scontrol", "slurmctld", "runuser") if not shutil.which(p)
    ]
    if missing:
        return f"Slurm packages missing ({', '.join(missing)}): run scripts/slurm-sandbox start"
    conf = jobset.SANDBOX / "etc" / "slurm.conf"
    if not conf.exists():
        return f"no sandbox at {jobset.SANDBOX}: run scripts/slurm-sandbox start"
    try:
        cp = subprocess.run(
            ["scontrol", "ping"],
            capture_output=True,
            text=True,
            timeout=20,
            env=jobset.slurm_env(),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"scontrol ping failed: {exc}"
    if cp.returncode != 0 or "UP" not in cp.stdout:
        return f"the sandbox's slurmctld does not answer (scontrol ping: {cp.stdout.strip() or cp.stderr.strip()}): run scripts/slurm-sandbox start"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marked = [i for i in items if i.get_closest_marker("slurm")]
    if not marked:
        return
    problem = sandbox_problem()
    if problem is None:
        return
    skip = pytest.mark.skip(reason=f"{SKIP_REASON}: {problem}")
    for item in marked:
        item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    # Read from the skip reports, which reach the summary with or without pytest-xdist
    # (its workers collect; the process that prints the summary does not).
    reasons = [
        str(r.longrepr[2] if isinstance(r.longrepr, tuple) else r.longrepr)
        for r in terminalreporter.stats.get("skipped", [])
        if SKIP_REASON in str(r.longrepr)
    ]
    if not reasons:
        return
    problem = reasons[0].split(f"{SKIP_REASON}: ", 1)[-1]
    terminalreporter.write_sep("!", "REAL-SLURM TESTS DID NOT RUN", red=True, bold=True)
    terminalreporter.write_line(
        f"{len(reasons)} tests marked 'slurm' were SKIPPED: {problem}. This run says nothing "
        "about real sacct output, `advisor ingest --sacct` or the Lua plugins inside slurmctld.",
        red=True,
        bold=True,
    )


@pytest.fixture(scope="session")
def submitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[jobset.JobResult]]:
    """The job mix, submitted once per session to the real sandbox and captured into a temp dir."""
    from tests.slurm import capture

    out = tmp_path_factory.mktemp("slurm-capture")
    results = capture.capture(out)
    return out, results
