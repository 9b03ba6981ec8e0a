"""The jobs the real-Slurm tests submit to the sandbox, and what each one must become.

Owns the job mix (sbatch, salloc and srun; arrays; a het job; typed and untyped GPU requests;
``--gpus``, ``--gpus-per-node``, ``--cpus-per-gpu``, ``-c``; the default one CPU; CPU-only,
failed, cancelled-pending and cancelled-running jobs; three users, two accounts), the expected
allocation of every job written from what was asked (not from what sacct printed), and the
times as ``scontrol show job`` reports them (a second source, compared with the ingested times).

Used by tests/slurm/test_real_slurm.py (live) and by ``python -m tests.slurm.capture`` (which
writes data/sample/slurm/ for tests/slurm/test_captured_*.py).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The real path: <repo>/.slurm-sandbox may be a link to /var/lib (see scripts/slurm-sandbox).
SANDBOX = Path(os.environ.get("ADVISOR_SLURM_SANDBOX", ROOT / ".slurm-sandbox")).resolve()
CLUSTER = "advisor-sandbox"


@dataclass(frozen=True)
class Submission:
    """One submission: who runs which client with which options, and what it must allocate.

    ``expect`` maps a component suffix ("" for a plain job, "_0" for array task 0, "+1" for
    het component 1) to the allocation that component must get.
    """

    key: str
    user: str
    client: str  # sbatch | salloc | srun
    args: tuple[str, ...]
    expect: Mapping[str, Expected]
    then: str = ""  # "" | "cancel-pending" | "cancel-running"


@dataclass(frozen=True)
class Expected:
    """What one allocation (job, array task, het component) must be once loaded.

    ``started`` False: cancelled while pending. Slurm 22.05 then reports Start = End = the
    cancel time (sacct text, sacct --json and scontrol alike) and no AllocTRES.
    """

    cpus: int | None
    gpus: int
    gpu_type: str | None  # canonical family
    gpu_type_raw: str | None
    state: str
    account: str
    partition: str
    nnodes: int | None
    req_cpus: int | None = None
    exit_code: str = "0:0"
    started: bool = True


@dataclass(frozen=True)
class JobResult:
    """A submitted allocation as the cluster saw it: ids, and times from ``scontrol show job``."""

    key: str  # submission key + component suffix
    job_id: str  # as sacct displays it: 12, 12_0, 12+1
    job_id_raw: int
    user: str
    submit: str  # ISO, UTC, from scontrol
    start: str | None
    end: str | None
    expected: Expected = field(repr=False)

    def as_json(self) -> dict[str, object]:
        d = asdict(self)
        d["expected"] = asdict(self.expected)
        return d


def _e(cpus: int | None, gpus: int, raw: str | None, **kw: object) -> Expected:
    fam = {"h100": "H100", "a100": "A100", None: None}[raw]
    base = {"state": "COMPLETED", "account": "physics", "partition": "gpu", "nnodes": 1}
    base.update(kw)
    return Expected(cpus=cpus, gpus=gpus, gpu_type=fam, gpu_type_raw=raw, **base)  # type: ignore[arg-type]


def _hetjob_script(path: Path) -> Path:
    path.write_text(
        "#!/bin/bash\n"
        "#SBATCH -J het-gpu-cpu -o /dev/null\n"
        "#SBATCH -p gpu --gres=gpu:h100:1 -c 2\n"
        "#SBATCH hetjob\n"
        "#SBATCH -p cpu -n 2\n"
        "srun --het-group=0 true\n"
        "srun --het-group=1 true\n",
        encoding="utf-8",
    )
    path.chmod(0o755)
    return path


def submissions(jobs_dir: Path) -> list[Submission]:
    """The job mix. CPUs on anode1 (A100, ThreadsPerCore=2) come in whole cores: 1 asked -> 2."""
    out = "-o", "/dev/null"
    het = _hetjob_script(jobs_dir / "hetjob.sh")
    return [
        Submission(
            "gres-h100-4",
            "alice",
            "sbatch",
            (
                "-J",
                "gres-h100-4",
                "-p",
                "gpu",
                "--gres=gpu:h100:4",
                *out,
                "--wrap",
                "srun true; srun -n1 true",
            ),
            {"": _e(1, 4, "h100", req_cpus=1)},
        ),
        Submission(
            "gpus-2-cpg-3",
            "bob",
            "sbatch",
            (
                "-J",
                "gpus-2-cpg-3",
                "-A",
                "chem",
                "-p",
                "gpu",
                "-w",
                "hnode2",
                "--gpus=2",
                "--cpus-per-gpu=3",
                *out,
                "--wrap",
                "srun true",
            ),
            # ReqCPUS stays 1 with --cpus-per-gpu (seen in 22.05): only AllocTRES has 6
            {"": _e(6, 2, "h100", account="chem", req_cpus=1)},
        ),
        Submission(
            "gpn-2x2-c4",
            "carol",
            "sbatch",
            (
                "-J",
                "gpn-2x2-c4",
                "-A",
                "chem",
                "-p",
                "gpu",
                "-N",
                "2",
                "-w",
                "hnode[1-2]",
                "--gpus-per-node=h100:2",
                "-c",
                "4",
                *out,
                "--wrap",
                "srun true",
            ),
            {"": _e(8, 4, "h100", account="chem", nnodes=2, req_cpus=8)},
        ),
        Submission(
            "a100-cpg-8",
            "alice",
            "sbatch",
            (
                "-J",
                "a100-cpg-8",
                "-p",
                "gpu",
                "--gres=gpu:a100:2",
                "--cpus-per-gpu=8",
                *out,
                "--wrap",
                "true",
            ),
            {"": _e(16, 2, "a100", req_cpus=1)},
        ),
        Submission(
            "a100-c16",
            "bob",
            "sbatch",
            (
                "-J",
                "a100-c16",
                "-p",
                "gpu",
                "--gres=gpu:a100:1",
                "-c",
                "16",
                *out,
                "--wrap",
                "true",
            ),
            {"": _e(16, 1, "a100", req_cpus=16)},
        ),
        Submission(
            "a100-c3",
            "carol",
            "sbatch",
            ("-J", "a100-c3", "-p", "gpu", "--gres=gpu:a100:1", "-c", "3", *out, "--wrap", "true"),
            {"": _e(4, 1, "a100", account="chem", req_cpus=3)},
        ),
        Submission(
            "a100-default",
            "carol",
            "sbatch",
            ("-J", "a100-default", "-p", "gpu", "--gres=gpu:a100:1", *out, "--wrap", "true"),
            {"": _e(2, 1, "a100", account="chem", req_cpus=1)},
        ),
        Submission(
            "cpu-n4",
            "alice",
            "sbatch",
            ("-J", "cpu-n4", "-n", "4", *out, "--wrap", "srun true"),
            {"": _e(4, 0, None, partition="cpu", req_cpus=4)},
        ),
        Submission(
            "cpu-default",
            "bob",
            "sbatch",
            (*out, "--wrap", "true"),  # no -J: the job is named "wrap"
            {"": _e(1, 0, None, partition="cpu", req_cpus=1)},
        ),
        Submission(
            "array-h100",
            "alice",
            "sbatch",
            (
                "-J",
                "array-h100",
                "-p",
                "gpu",
                "--array=0-2",
                "--gres=gpu:h100:1",
                "-c",
                "2",
                *out,
                "--wrap",
                "srun true",
            ),
            {f"_{i}": _e(2, 1, "h100", req_cpus=2) for i in range(3)},
        ),
        Submission(
            "failed",
            "bob",
            "sbatch",
            ("-J", "failed", "-A", "chem", *out, "--wrap", "exit 3"),
            {
                "": _e(
                    1,
                    0,
                    None,
                    account="chem",
                    partition="cpu",
                    state="FAILED",
                    exit_code="3:0",
                    req_cpus=1,
                )
            },
        ),
        Submission(
            "cancel-pending",
            "carol",
            "sbatch",
            (
                "-J",
                "cancel-pending",
                "-H",
                "-p",
                "gpu",
                "--gres=gpu:h100:1",
                *out,
                "--wrap",
                "true",
            ),
            {
                "": _e(
                    None,
                    0,
                    None,
                    account="chem",
                    state="CANCELLED",
                    started=False,
                    nnodes=None,
                    req_cpus=1,
                )
            },
            then="cancel-pending",
        ),
        Submission(
            "cancel-running",
            "alice",
            "sbatch",
            ("-J", "cancel-running", "-p", "gpu", "--gres=gpu:h100:2", *out, "--wrap", "sleep 300"),
            {"": _e(1, 2, "h100", state="CANCELLED", req_cpus=1)},
            then="cancel-running",
        ),
        Submission(
            "salloc-h100-c4",
            "carol",
            "salloc",
            (
                "-J",
                "salloc-h100-c4",
                "-p",
                "gpu",
                "--gres=gpu:h100:1",
                "-c",
                "4",
                "sh",
                "-c",
                "srun true; echo JOBID=$SLURM_JOB_ID",
            ),
            {"": _e(4, 1, "h100", account="chem", req_cpus=4)},
        ),
        Submission(
            "srun-a100",
            "bob",
            "srun",
            (
                "-J",
                "srun-a100",
                "-p",
                "gpu",
                "--gpus=a100:1",
                "sh",
                "-c",
                "echo JOBID=$SLURM_JOB_ID",
            ),
            {"": _e(2, 1, "a100", req_cpus=1)},
        ),
        Submission(
            "het-gpu-cpu",
            "alice",
            "sbatch",
            (str(het),),
            {"+0": _e(2, 1, "h100", req_cpus=2), "+1": _e(2, 0, None, partition="cpu", req_cpus=2)},
        ),
    ]


# --- running Slurm clients -------------------------------------------------------------------


def slurm_env() -> dict[str, str]:
    env = dict(os.environ)
    env["SLURM_CONF"] = str(SANDBOX / "etc" / "slurm.conf")
    env["TZ"] = "UTC"
    for k in list(env):
        if k.startswith(("SLURM_TIME_FORMAT", "SBATCH_", "SALLOC_", "SRUN_", "SACCT_")):
            del env[k]
    return env


def run(
    argv: Sequence[str],
    *,
    user: str | None = None,
    timeout_s: float = 120,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a Slurm client (as ``user`` through runuser, which keeps the environment) in the
    sandbox's jobs dir; ``env`` adds variables."""
    cmd = ["runuser", "-u", user, "--", *argv] if user and user != "root" else list(argv)
    cp = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**slurm_env(), **(env or {})},
        cwd=SANDBOX / "jobs",
        check=False,
    )
    if check and cp.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} exited {cp.returncode}: {cp.stderr.strip()}")
    return cp


def scontrol_job(job_id: int | str) -> list[dict[str, str]]:
    """``scontrol show job -o ID``: one dict per record (array tasks, het components)."""
    cp = run(["scontrol", "show", "job", "-o", str(job_id)])
    recs = []
    for line in cp.stdout.splitlines():
        if not line.strip():
            continue
        rec = {}
        for m in re.finditer(r"(\w+)=(.*?)(?= \w+=|$)", line):
            rec[m.group(1)] = m.group(2)
        recs.append(rec)
    return recs


def _time(v: str | None) -> str | None:
    if v in (None, "", "Unknown", "None", "N/A"):
        return None
    return dt.datetime.fromisoformat(v).isoformat()


def _wait_state(job_id: int, states: set[str], timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        recs = scontrol_job(job_id)
        if recs and all(r.get("JobState") in states for r in recs):
            return
        time.sleep(0.3)
    raise RuntimeError(f"job {job_id} not in {states} after {timeout_s}s")


def submit_all(jobs_dir: Path | None = None) -> list[JobResult]:
    """Submit the whole mix, wait until every job ended, return one result per allocation."""
    jobs_dir = jobs_dir or SANDBOX / "jobs"
    ids: dict[str, int] = {}
    subs = submissions(jobs_dir)
    for s in subs:
        if s.client == "sbatch":
            cp = run(["sbatch", "--parsable", *s.args], user=s.user)
            ids[s.key] = int(cp.stdout.strip().split(";")[0])
        else:
            cp = run([s.client, *s.args], user=s.user, timeout_s=180)
            m = re.search(r"JOBID=(\d+)", cp.stdout)
            if not m:
                raise RuntimeError(f"{s.client} printed no job id: {cp.stdout!r} {cp.stderr!r}")
            ids[s.key] = int(m.group(1))
        if s.then == "cancel-pending":
            run(["scancel", str(ids[s.key])], user=s.user)
        elif s.then == "cancel-running":
            _wait_state(ids[s.key], {"RUNNING"})
            time.sleep(1.5)  # a non-zero elapsed time
            run(["scancel", str(ids[s.key])])  # as root: "CANCELLED by 0"
    ended = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}
    for jid in ids.values():
        _wait_state(jid, ended, timeout_s=180)
    results: list[JobResult] = []
    for s in subs:
        for rec in scontrol_job(ids[s.key]):
            if "ArrayTaskId" in rec:
                suffix = f"_{rec['ArrayTaskId']}"
                display = f"{rec['ArrayJobId']}{suffix}"
            elif "HetJobOffset" in rec:
                suffix = f"+{rec['HetJobOffset']}"
                display = f"{rec['HetJobId']}{suffix}"
            else:
                suffix, display = "", rec["JobId"]
            exp = s.expect[suffix]
            results.append(
                JobResult(
                    key=s.key + suffix,
                    job_id=display,
                    job_id_raw=int(rec["JobId"]),
                    user=s.user,
                    submit=_time(rec.get("SubmitTime")) or "",
                    start=_time(rec.get("StartTime")),
                    end=_time(rec.get("EndTime")),
                    expected=exp,
                )
            )
    return sorted(results, key=lambda r: r.job_id_raw)


def with_expected(r: JobResult, **changes: object) -> JobResult:
    """A copy whose expectation differs (used where a format cannot carry a value)."""
    return replace(r, expected=replace(r.expected, **changes))  # type: ignore[arg-type]
