"""Issue 38's faults, at the level a user meets them: the installed console script on files an
attacker or a careless admin could hand it, and a real DuckDB file afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb

HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|"
    "WorkDir|JobName|SubmitLine"
)


def _row(job: int, gpus: int) -> str:
    return (
        f"{job}|{job}|c|gpu|normal|lab|lab|alice|1001|2024-01-01T01:00:00|2024-01-01T01:00:00|"
        "2024-01-01T01:00:10|2024-01-01T02:00:10|01:00:00|0:0|COMPLETED|1|8|8|32G|"
        f"billing=8,cpu=8,gres/gpu={gpus},mem=32G,node=1|"
        f"billing=8,cpu=8,gres/gpu={gpus},mem=32G,node=1|1-00:00:00|n1|/home/a|run|sbatch x"
    )


def _advisor(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args, "--db", str(db)], capture_output=True, text=True
    )


def _jobs(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute('SELECT job_id_raw, "user", uid, gpus FROM jobs ORDER BY 1').fetchall()
    finally:
        con.close()


JOBCOMP_TAIL = (
    " JobState=COMPLETED Partition=gpu TimeLimit=60 StartTime=2024-01-01T00:00:00 "
    "EndTime=2024-01-01T01:00:00 NodeList=n1 NodeCnt=1 ProcCnt=4 WorkDir=/tmp "
    "ReservationName= Tres=cpu=4,gres/gpu=1 Account=a QOS=normal WcKey= Cluster=c "
    "SubmitTime=2024-01-01T00:00:00 EligibleTime=2024-01-01T00:00:00"
)


def test_a_job_name_holding_slurms_keys_cannot_forge_another_users_job_in_jobcomp(tmp_path):
    log = tmp_path / "jobcomp.log"
    log.write_text(
        "JobId=3 UserId=alice(1001) GroupId=g(100) Name=a UserId=mallory(6666) JobId=31337"
        + JOBCOMP_TAIL
        + "\n"
        + "JobId=4 UserId=bob(1002) GroupId=g(100) Name=a name with spaces"
        + JOBCOMP_TAIL
        + "\n"
    )
    db = tmp_path / "a.duckdb"
    done = _advisor(db, "ingest", str(log), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (s,) = json.loads(done.stdout)
    assert (s["inserted"], s["rejected"]) == (1, 1)
    assert "line 1, field UserId: the key UserId appears twice" in s["first_reasons"][0]
    # nothing of mallory's, nothing of job 31337; bob's job and its name kept whole
    assert [(j, u, uid) for j, u, uid, _ in _jobs(db)] == [(4, "bob", 1002)]


def test_one_record_of_absurdly_many_gpus_is_rejected_naming_alloctres_and_the_rest_load(
    tmp_path,
):
    text = tmp_path / "sacct.txt"
    rows = [HEADER, _row(1, 4), _row(2, 21_474_837), _row(3, 2), _row(4, 2**31 - 1)]
    text.write_text("\n".join(rows) + "\n")
    db = tmp_path / "a.duckdb"
    done = _advisor(db, "ingest", str(text), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (s,) = json.loads(done.stdout)
    assert (s["inserted"], s["rejected"]) == (2, 2)
    assert s["first_reasons"][0].startswith("line 3, field AllocTRES: ")
    assert "at most 2^20 GPUs" in s["first_reasons"][0]
    assert {j: g for j, _, _, g in _jobs(db)} == {1: 4, 3: 2}


def test_a_nul_byte_in_user_account_or_partition_rejects_the_record_naming_the_field(tmp_path):
    rows = [HEADER, _row(1, 1)]
    for job, (col, value) in enumerate([(7, "al\x00ice"), (5, "la\x00b"), (3, "gp\x00u")], start=2):
        cells = _row(job, 1).split("|")
        cells[col] = value
        rows.append("|".join(cells))
    text = tmp_path / "sacct.txt"
    text.write_bytes(("\n".join(rows) + "\n").encode())
    db = tmp_path / "a.duckdb"
    done = _advisor(db, "ingest", str(text), "--format", "json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    (s,) = json.loads(done.stdout)
    assert (s["inserted"], s["rejected"]) == (1, 3)
    fields = [r.split("field ", 1)[1].split(":", 1)[0] for r in s["first_reasons"]]
    assert fields == ["User", "Account", "Partition"]
    assert all("holds a NUL byte" in r for r in s["first_reasons"])
    assert [j for j, *_ in _jobs(db)] == [1]


def test_recommend_puts_its_answer_whole_on_the_first_line_of_an_80_column_terminal(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "advisor", "recommend", "--gpu-type", "H100", "--gpus", "4"],
        capture_output=True, text=True, env={**__import__("os").environ, "COLUMNS": "80"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("--cpus-per-gpu=") and len(first) <= 80
    assert "cores for 4 GPUs" in first
