"""CPU efficiency from a real slurmdbd (issue 23): a job that burns both of its cores and a job
that sleeps, on the sandbox's fake-GPU nodes, exported by real sacct with TotalCPU and
CPUTimeRAW, loaded by the ingest; the efficiency advisor derives must match the one computed
here from sacct's own fields, and tell the burner from the sleeper. GPU utilisation cannot be
produced here (fake GPUs): tests/test_usage.py covers it on documented-format fixtures.
Skipped, loudly, without the sandbox (tests/slurm/conftest.py)."""

from __future__ import annotations

import time

import pytest

from advisor import store, usage
from advisor.ingest import ingest_files
from tests.slurm import jobset

pytestmark = pytest.mark.slurm

FIELDS = (
    "JobID,JobIDRaw,Cluster,Partition,Account,User,State,Submit,Start,End,ElapsedRaw,NCPUS,"
    "AllocTRES,TotalCPU,CPUTimeRAW,TRESUsageInTot,TRESUsageInMax"
)
BURN_S = 12
# Two busy loops for BURN_S seconds in the batch step, on the job's two CPUs.
BURN = f'for i in 1 2; do timeout {BURN_S} sh -c "while :; do :; done" & done; wait'


def _cpu_s(text: str) -> float:
    """sacct's TotalCPU text ([D-][HH:]MM:SS[.mmm]) in seconds, parsed here independently."""
    days, _, rest = text.rpartition("-")
    secs = 0.0
    for part in rest.split(":"):
        secs = secs * 60 + float(part)
    return (int(days) if days else 0) * 86400 + secs


def _rows(text: str) -> dict[str, dict[str, str]]:
    """sacct's -P text with FIELDS: each line's fields by name, under its JobID."""
    rows = {}
    for line in text.splitlines()[1:]:
        f = dict(zip(FIELDS.split(","), line.split("|"), strict=True))
        rows[f["JobID"]] = f
    return rows


def _settled(text: str, job_ids) -> bool:
    """Whether sacct's -P text holds every job and its batch step, each ended with a TotalCPU."""
    rows = _rows(text)
    for jid in job_ids:
        for key in (str(jid), f"{jid}.batch"):
            f = rows.get(key)
            if f is None or f["End"] in ("", "Unknown") or not f["TotalCPU"]:
                return False
            if f["State"] in ("PENDING", "RUNNING", "COMPLETING"):
                return False
    return True


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("usage-real")
    ids = {}
    for key, wrap in (("burn", BURN), ("sleep", f"sleep {BURN_S}")):
        cp = jobset.run(
            [
                "sbatch",
                "--parsable",
                "-J",
                f"usage-{key}",
                "-p",
                "gpu",
                "--gres=gpu:h100:1",
                "-c",
                "2",
                "-o",
                "/dev/null",
                "--wrap",
                wrap,
            ],
            user="alice",
        )
        ids[key] = int(cp.stdout.strip().split(";")[0])
    for jid in ids.values():
        jobset._wait_state(jid, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, timeout_s=180)
    id_list = ",".join(str(j) for j in ids.values())
    # slurmdbd stores a job's end a moment before its batch step's: until the step has ended
    # there, sacct shows the job with TotalCPU 00:00:00, a real zero it has not summed yet.
    text = ""
    for _ in range(120):
        text = jobset.run(["sacct", "-P", "-j", id_list, f"--format={FIELDS}"]).stdout
        if _settled(text, ids.values()):
            break
        time.sleep(1)
    else:
        raise AssertionError(f"sacct never showed both batch steps ended:\n{text}")
    path = tmp / "sacct-usage.txt"
    path.write_text(text)
    db = tmp / "a.duckdb"
    [s] = ingest_files(db, [path])
    assert s.rejected == 0, s.first_reasons
    return db, ids, _rows(text)


def test_real_totalcpu_gives_the_efficiency_sacct_implies(loaded) -> None:
    db, ids, rows = loaded
    con = store.connect(db, read_only=True)
    try:
        jobs = {r["job_id_raw"]: r for r in usage.job_usage(con, usage.UsageQuery(), limit=None)}
    finally:
        con.close()
    for key, jid in ids.items():
        job = rows[str(jid)]
        steps = [f for k, f in rows.items() if k.startswith(f"{jid}.") and f["TotalCPU"]]
        used = max(_cpu_s(job["TotalCPU"]), sum(_cpu_s(s["TotalCPU"]) for s in steps))
        expected = used / (int(job["ElapsedRaw"]) * int(job["NCPUS"]))
        got = jobs[jid]["cpu_efficiency"]
        assert got == pytest.approx(expected, rel=1e-6), (key, job)
        assert jobs[jid]["cpu_used_s"] == pytest.approx(used, rel=1e-6)
        assert int(job["CPUTimeRAW"]) == int(job["ElapsedRaw"]) * int(job["NCPUS"])


def test_the_burner_is_busy_and_the_sleeper_idle(loaded) -> None:
    db, ids, rows = loaded
    con = store.connect(db, read_only=True)
    try:
        jobs = {r["job_id_raw"]: r for r in usage.job_usage(con, usage.UsageQuery(), limit=None)}
    finally:
        con.close()
    # A shared two-core host: the burner gets what the machine leaves it (0.25 of its two cores
    # at a load average of 8), still a hundred times a sleeper's few milliseconds.
    burn, sleep = jobs[ids["burn"]]["cpu_efficiency"], jobs[ids["sleep"]]["cpu_efficiency"]
    assert burn > 0.1 and sleep < 0.01, rows
    assert burn > 100 * sleep
    assert jobs[ids["burn"]]["gpu_util_mean_pct"] is None  # fake GPUs: no gres/gpuutil
