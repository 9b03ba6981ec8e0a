"""The Lua plugins' logic (rule matching, decisions, broken policies) run by plain lua5.1.

No Slurm needed: tests/slurm/lua/*.lua load slurm/job_submit.lua and slurm/cli_filter.lua with a
stand-in for the ``slurm`` table (the one thing only slurmctld provides; the real slurmctld runs
them in test_lua_in_slurmctld.py) and print TAP lines. The policy ``advisor policy export``
writes is fed to them too, so the contract of docs/policy-format.md is checked end to end.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LUA = shutil.which("lua5.1")

needs_lua = pytest.mark.skipif(
    LUA is None, reason="LUA 5.1 MISSING: the Lua plugin logic was NOT tested (apt install lua5.1)"
)


@pytest.fixture(scope="module")
def exported_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The policy file as `advisor policy export --format lua` writes it (no database: the model and pricing defaults)."""
    from advisor.policy import PolicyConfig, build_policy, to_lua

    out = tmp_path_factory.mktemp("policy") / "advisor-policy.lua"
    out.write_text(to_lua(build_policy(PolicyConfig())), encoding="utf-8")
    return out


def run_lua(script: str, tmp_path: Path, *extra: str) -> list[str]:
    assert LUA is not None
    cp = subprocess.run(
        [LUA, str(ROOT / "tests" / "slurm" / "lua" / script), str(ROOT), str(tmp_path), *extra],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = cp.stdout.splitlines()
    failed = [ln for ln in lines if ln.startswith("not ok")]
    assert cp.returncode == 0 and not failed, "\n".join(failed) or cp.stderr or cp.stdout
    return lines


@needs_lua
def test_job_submit_lua_decides_as_the_policy_format_says(tmp_path, exported_policy):
    lines = run_lua("test_job_submit.lua", tmp_path, str(exported_policy))
    oks = [ln for ln in lines if ln.startswith("ok ")]
    assert len(oks) == 17
    assert lines[-1] == "1..17"


@needs_lua
def test_cli_filter_lua_advises_and_sets_defaults_only_when_asked(tmp_path):
    lines = run_lua("test_cli_filter.lua", tmp_path)
    assert len([ln for ln in lines if ln.startswith("ok ")]) == 7
    assert lines[-1] == "1..7"
