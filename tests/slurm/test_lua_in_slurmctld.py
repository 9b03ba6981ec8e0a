"""slurm/job_submit.lua and slurm/cli_filter.lua inside the sandbox's real slurmctld and clients.

The module fixture writes a policy by hand (docs/policy-format.md), restarts slurmctld with
JobSubmitPlugins=lua and CliFilterPlugins=lua (`scripts/slurm-sandbox plugins on`), and turns
them off again afterwards. The allocated CPUs are read back from scontrol and sacct.
"""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

from tests.slurm import jobset

pytestmark = pytest.mark.slurm

POLICY = """\
return {
  version = 1, generated_at = "2026-11-29T22:40:00Z", source = "tests/slurm",
  rules = {
    { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, default_cpus_per_gpu = 8,
      mode = "set-default-when-unset" },
    { partition = "gpu", gpu_type = "a100", min_cpus_per_gpu = 4, default_cpus_per_gpu = 6,
      mode = "advise" },
    { partition = "gpu", gpu_type = "*", min_cpus_per_gpu = 3, default_cpus_per_gpu = 5,
      mode = "enforce-minimum" },
  },
}
"""
SCRIPT = jobset.ROOT / "scripts" / "slurm-sandbox"
POLICY_FILE = jobset.SANDBOX / "etc" / "advisor-policy.lua"


def sandbox(*args: str) -> None:
    subprocess.run([str(SCRIPT), *args], check=True, capture_output=True, timeout=180)


LOADED = "(generated_at 2026-11-29T22:40:00Z): 3 rules loaded"  # POLICY, as the plugin logs it


@pytest.fixture(scope="module")
def plugins_on():  # type: ignore[no-untyped-def]
    POLICY_FILE.write_text(POLICY, encoding="utf-8")
    sandbox("plugins", "on")
    try:
        load_policy(POLICY, LOADED)
        yield POLICY_FILE
    finally:
        POLICY_FILE.unlink(missing_ok=True)
        sandbox("plugins", "off")


def submit(user: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """sbatch as ``user``; (job id, what sbatch printed on stderr)."""
    cp = jobset.run(
        ["sbatch", "--parsable", "-o", "/dev/null", *args, "--wrap", "true"], user=user, env=env
    )
    return int(cp.stdout.strip().split(";")[0]), cp.stderr


def allocated_cpus(job_id: int) -> int:
    """CPUs of the job as slurmctld allocated them (scontrol), checked against sacct."""
    jobset._wait_state(job_id, {"COMPLETED", "FAILED", "CANCELLED"})
    [rec] = jobset.scontrol_job(job_id)
    cpus = int(rec["NumCPUs"])
    for _ in range(50):  # slurmdbd receives the record a moment after the job ends
        out = jobset.run(["sacct", "-X", "-n", "-P", "-j", str(job_id), "-o", "AllocTRES"]).stdout
        m = re.search(r"cpu=(\d+)", out)
        if m:
            assert int(m.group(1)) == cpus
            return cpus
        time.sleep(0.2)
    raise AssertionError(f"sacct has no AllocTRES for job {job_id}")


def test_a_gpu_job_that_sets_no_cpus_gets_the_policy_cores_per_gpu(plugins_on):
    job, err = submit("alice", "-p", "gpu", "--gres=gpu:h100:2")
    assert allocated_cpus(job) == 16  # 2 GPUs x default_cpus_per_gpu 8
    assert "this job gets --cpus-per-gpu=8 (16 CPUs for 2 GPUs)" in err


def test_a_job_with_its_own_cpus_per_gpu_is_left_alone_in_default_mode(plugins_on):
    job, err = submit("bob", "-p", "gpu", "--gres=gpu:h100:2", "--cpus-per-gpu=5")
    assert allocated_cpus(job) == 10
    assert "advisor" not in err


def test_a_job_with_a_low_cpus_per_task_keeps_it_and_is_told_the_flag(plugins_on):
    job, err = submit("carol", "-A", "chem", "-p", "gpu", "--gres=gpu:h100:2", "-c", "2")
    assert allocated_cpus(job) == 2
    assert "this job gets 1 CPU cores per GPU (2 h100 GPUs in partition gpu)" in err
    assert "--cpus-per-gpu=8" in err


def test_advise_mode_tells_the_salloc_user_and_changes_nothing(plugins_on):
    cp = jobset.run(
        ["salloc", "-p", "gpu", "--gres=gpu:a100:1", "sh", "-c", "echo JOBID=$SLURM_JOB_ID"],
        user="bob",
    )
    job = int(re.search(r"JOBID=(\d+)", cp.stdout).group(1))  # type: ignore[union-attr]
    # from job_submit.lua (slurm.log_user) and from cli_filter.lua (slurm.log_info, "lua:")
    assert "salloc: advisor: this job gets 1 CPU cores per GPU (1 a100 GPU" in cp.stderr
    assert "salloc: lua: advisor: this job gets 1 CPU cores per GPU" in cp.stderr
    assert "--cpus-per-gpu=6" in cp.stderr
    assert allocated_cpus(job) == 2  # one whole core (2 threads) on anode1, as without a policy


def _touch_plugin() -> None:
    """Give job_submit.lua a new mtime whole seconds after its last one: slurmctld compares
    mtimes in seconds, so two touches within one second (break, then restore) would look like
    one change."""
    script = jobset.SANDBOX / "etc" / "job_submit.lua"
    t = int(max(time.time(), script.stat().st_mtime)) + 2
    os.utime(script, (t, t))


def _log_size() -> int:
    return (jobset.SANDBOX / "log" / "slurmctld.log").stat().st_size


def _log_since(offset: int) -> str:
    with open(jobset.SANDBOX / "log" / "slurmctld.log", encoding="utf-8", errors="replace") as fh:
        fh.seek(offset)
        return fh.read()


def load_policy(text: str | bytes, expect: str, timeout_s: float = 120) -> str:
    """Write the policy file and wait until slurmctld has loaded it: until its log shows
    ``expect`` (the plugin's own line for this load) after the write. slurmctld reloads
    job_submit.lua, and so the policy, only when a job is submitted, so held probe jobs (each
    cancelled at once) are submitted until it has, the script touched again before each; never
    a wait on time alone. Returns the log written since the write."""
    offset = _log_size()
    if isinstance(text, bytes):
        POLICY_FILE.write_bytes(text)
    else:
        POLICY_FILE.write_text(text, encoding="utf-8")
    deadline = time.monotonic() + timeout_s
    while True:
        _touch_plugin()
        probe = jobset.run(
            ["sbatch", "--parsable", "--hold", "-o", "/dev/null", "-p", "gpu",
             "--gres=gpu:h100:1", "--wrap", "true"],
            user="root",
            check=False,
        )  # fmt: skip
        if probe.returncode == 0:
            jobset.run(["scancel", probe.stdout.strip().split(";")[0]], check=False)
        tail = _log_since(offset)
        if expect in tail:
            return tail
        if time.monotonic() > deadline:
            raise AssertionError(f"slurmctld did not log {expect!r} in {timeout_s:g} s: {tail!r}")
        time.sleep(0.5)


def test_a_broken_policy_file_lets_jobs_through_unchanged_and_is_logged(plugins_on):
    try:
        tail = load_policy("return {  -- cut off mid-write\n", "jobs go through unchanged")
        assert "advisor policy" in tail
        job, err = submit("alice", "-p", "gpu", "--gres=gpu:h100:2")
        assert allocated_cpus(job) == 1  # Slurm's own default: one CPU
        assert "advisor" not in err  # neither plugin says anything to the user
    finally:
        load_policy(POLICY, LOADED)


def test_a_rule_with_its_minimum_above_its_default_is_ignored_and_logged(plugins_on):
    # the h100 rule asks for at least 12 but would set 8: dropped, so (gpu, *) applies
    bad = POLICY.replace(
        "min_cpus_per_gpu = 4, default_cpus_per_gpu = 8",
        "min_cpus_per_gpu = 12, default_cpus_per_gpu = 8",
    )
    try:
        load_policy(bad, "rule 1: bad min_cpus_per_gpu (12 above default_cpus_per_gpu 8) (ignored)")
        job, err = submit("alice", "-p", "gpu", "--gres=gpu:h100:2")
        assert allocated_cpus(job) == 10  # 2 GPUs x the (gpu, *) rule's default 5, never 2 x 8
        assert "this job gets --cpus-per-gpu=5 (10 CPUs for 2 GPUs)" in err
    finally:
        load_policy(POLICY, LOADED)


def test_a_precompiled_policy_is_refused_and_jobs_go_through_unchanged(plugins_on, tmp_path):
    import shutil

    luac = shutil.which("luac5.1")
    assert luac, "luac5.1 (package lua5.1) is needed to compile the policy"
    source = tmp_path / "policy.lua"
    source.write_text(POLICY, encoding="utf-8")
    compiled = tmp_path / "policy.luac"
    subprocess.run([luac, "-o", str(compiled), str(source)], check=True, timeout=30)
    assert compiled.read_bytes()[:1] == b"\x1b"
    try:
        load_policy(
            compiled.read_bytes(),
            "precompiled Lua bytecode (refused: a policy is read as text only)",
        )
        job, err = submit("alice", "-p", "gpu", "--gres=gpu:h100:2")
        assert allocated_cpus(job) == 1  # Slurm's own default: the bytecode's rules never ran
        assert "advisor" not in err
    finally:
        load_policy(POLICY, LOADED)


def test_an_untyped_gpus_request_without_cpus_gets_the_wildcard_rule_default(plugins_on):
    job, err = submit("alice", "-p", "gpu", "--gpus=2")  # arrives as tres_per_job
    assert allocated_cpus(job) == 10  # 2 GPUs x default 5 of the (gpu, *) rule
    assert "this job gets --cpus-per-gpu=5 (10 CPUs for 2 GPUs)" in err


def test_enforce_minimum_raises_a_low_cpus_per_gpu(plugins_on):
    job, err = submit("bob", "-p", "gpu", "--gpus=2", "--cpus-per-gpu=1")
    assert allocated_cpus(job) == 6  # raised to the minimum 3 per GPU
    assert "sbatch: advisor: --cpus-per-gpu=1 raised to the minimum of 3 here." in err


def test_enforce_minimum_rejects_a_low_cpus_per_task_naming_the_flag(plugins_on):
    cp = jobset.run(
        [
            "sbatch",
            "--parsable",
            "-o",
            "/dev/null",
            "-p",
            "gpu",
            "--gpus=2",
            "-c",
            "1",
            "--wrap",
            "true",
        ],
        user="carol",
        check=False,
    )
    assert cp.returncode != 0 and cp.stdout.strip() == ""
    assert "below the minimum of 3 here; submit with --cpus-per-gpu=5 instead" in cp.stderr
    assert "Batch job submission failed" in cp.stderr


def test_cli_filter_sets_the_default_itself_when_the_user_asks(plugins_on):
    job, err = submit(
        "alice", "-p", "gpu", "--gres=gpu:h100:2", env={"ADVISOR_CLI_SET_DEFAULTS": "1"}
    )
    assert allocated_cpus(job) == 16
    assert "sbatch: lua: advisor: set --cpus-per-gpu=8 (site policy)" in err
    assert "no CPU count given" not in err  # job_submit saw the user's (client-set) value
