"""scripts/check's decision about the real-Slurm sandbox, through its own ``--plan`` mode.

``--plan`` runs the same decision code as a real check and then stops before any step, so these
tests see what a user would see at the top of a run without starting Slurm or the test suite.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SLURM_PROGRAMS = (
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "sacct",
    "sbatch",
    "scontrol",
    "sacctmgr",
    "mariadbd",
    "munged",
)


def _plan(
    *args: str, check: Path = ROOT / "scripts" / "check", user: str | None = None, **env: str
) -> tuple[str, list[str]]:
    """(the sandbox decision, the NOTICE lines) printed by ``scripts/check --plan``."""
    argv = ["bash", str(check), "--plan", *args]
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, env={**os.environ, **env}
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    (decision,) = [ln.split(": ", 2)[2] for ln in lines if ln.startswith("check: slurm sandbox:")]
    return decision, [ln for ln in lines if ln.startswith("check: NOTICE:")]


@pytest.fixture
def readable_dir():
    """A folder every user can traverse (pytest's own tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="advisor-check-"))
    yield path
    shutil.rmtree(path)


def _copy_scripts(root: Path, sandbox_status_rc: int | None = None) -> Path:
    """A checkout-shaped folder every user can read, holding scripts/check (and, when asked, a
    stand-in scripts/slurm-sandbox whose `status` exits with the given code)."""
    (root / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "check", root / "scripts" / "check")
    if sandbox_status_rc is not None:
        stand_in = root / "scripts" / "slurm-sandbox"
        stand_in.write_text(f'#!/bin/sh\n[ "$1" = status ] && exit {sandbox_status_rc}\nexit 9\n')
    for path in (root, root / "scripts", *(root / "scripts").iterdir()):
        path.chmod(
            path.stat().st_mode
            | stat.S_IRWXU
            | stat.S_IRGRP
            | stat.S_IXGRP
            | stat.S_IROTH
            | stat.S_IXOTH
        )
    return root


def _sandbox_of_this_checkout_runs() -> bool:
    return (
        subprocess.run(
            [str(ROOT / "scripts" / "slurm-sandbox"), "status"], capture_output=True, timeout=60
        ).returncode
        == 0
    )


def test_the_plan_matches_this_machine_root_and_slurm_start_it_else_say_how():
    decision, notices = _plan("-x")
    if _sandbox_of_this_checkout_runs():
        assert decision == "use-running" and notices == []
    elif os.geteuid() == 0 and all(shutil.which(p) for p in SLURM_PROGRAMS):
        assert decision == "start" and notices == []
    else:
        assert decision == "skip" and len(notices) == 1
        assert "To run them:" in notices[0] and "scripts/check" in notices[0]


def test_without_slurm_programs_on_the_path_it_names_dev_setup_as_the_fix(readable_dir):
    if os.geteuid() != 0:
        pytest.skip("as a normal user the not-root notice comes first (tested below)")
    # /usr/sbin holds slurmctld, slurmdbd, mariadbd and munged on Debian; without it they are
    # as absent to the script as on a machine where dev-setup never installed them. A stand-in
    # sandbox that does not answer: the checkout's own may be running (scripts/check runs this).
    decision, notices = _plan(
        check=_copy_scripts(readable_dir, sandbox_status_rc=1) / "scripts" / "check",
        PATH="/usr/local/bin:/usr/bin:/bin",
    )
    assert decision == "skip"
    (notice,) = notices
    assert "Slurm is not installed" in notice and "slurmctld" in notice
    assert notice.endswith("To run them: scripts/dev-setup && scripts/check")


def test_a_user_who_is_not_root_is_told_the_one_command_as_root(readable_dir):
    if os.geteuid() != 0 or not shutil.which("runuser"):
        decision, notices = _plan()  # already a normal user: the same branch, as is
    else:
        decision, notices = _plan(
            check=_copy_scripts(readable_dir) / "scripts" / "check", user="nobody"
        )
    assert decision == "skip"
    (notice,) = notices
    assert "not root" in notice
    assert notice.endswith("To run them: sudo scripts/dev-setup && sudo scripts/check")


def test_a_sandbox_that_already_answers_is_used_not_started_again(readable_dir):
    # The stand-in stands for scripts/slurm-sandbox only in its `status` exit code, which is all
    # the decision reads; the real script is exercised by .ci/run and the slurm-marked tests.
    decision, notices = _plan(
        check=_copy_scripts(readable_dir, sandbox_status_rc=0) / "scripts" / "check"
    )
    assert decision == "use-running" and notices == []


def test_the_sandbox_can_be_skipped_on_purpose_and_the_notice_says_so():
    decision, notices = _plan(ADVISOR_CHECK_SANDBOX="no")
    assert decision == "skip"
    (notice,) = notices
    assert "ADVISOR_CHECK_SANDBOX=no" in notice


def test_the_notice_comes_once_at_the_top_and_once_at_the_bottom():
    text = (ROOT / "scripts" / "check").read_text(encoding="utf-8")
    body = text.split("\nstatus=0\n", 1)
    assert len(body) == 2
    before_steps, steps = body
    assert before_steps.count("\nnotice\n") == 1  # after the decision, before any step
    assert steps.rstrip().splitlines()[-3] == "notice"  # after pytest, before the verdict
