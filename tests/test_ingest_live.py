"""``advisor ingest --sacct``: the real process launch, window by window, resumable.

The unit tests put a small executable ``sacct`` on PATH (the only thing replaced is the program
launched: the process, its arguments and environment are real). It records its argv and
environment and prints sacct -P output in the format our command line asks for. The last test
runs the real sacct of the one-host Slurm sandbox (marker ``slurm``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from advisor.errors import ExternalToolError, UsageError
from advisor.ingest import IngestOptions, SacctWindowConfig, ingest_sacct
from advisor.ingest.live import DELIMITER, SACCT_FIELDS, windows

FAKE = r"""#!/usr/bin/env python3
import json, os, sys
log = os.environ["FAKE_SACCT_LOG"]
with open(log, "a") as fh:
    fh.write(json.dumps({"argv": sys.argv, "TZ": os.environ.get("TZ"),
                         "fmt": os.environ.get("SLURM_TIME_FORMAT"),
                         "sacct_format": os.environ.get("SACCT_FORMAT")}) + "\n")
start = [a for a in sys.argv if a.startswith("--starttime=")][0].split("=", 1)[1]
if start.startswith(os.environ.get("FAKE_SACCT_FAIL_AT", "never")):
    sys.stderr.write("sacct: error: slurmdbd: connection refused\n")
    sys.exit(1)
fields = [a for a in sys.argv if a.startswith("--format=")][0].split("=", 1)[1].split(",")
d = "\x1f"
day = start[:10]
n = int(day[-2:])
rows = {
    "JobID": str(n), "JobIDRaw": str(n), "Cluster": "live", "Partition": "gpu", "QOS": "normal",
    "Account": "lab", "Group": "lab", "User": "ana", "UID": "1001",
    "Submit": day + "T10:00:00", "Eligible": day + "T10:00:00", "Start": day + "T10:00:05",
    "End": day + "T11:00:05", "ElapsedRaw": "3600", "TimelimitRaw": "60", "ExitCode": "0:0",
    "State": "COMPLETED", "NNodes": "1", "NCPUS": "4", "ReqCPUS": "4", "ReqMem": "16G",
    "ReqTRES": "cpu=4,gres/gpu=2", "AllocTRES": "cpu=4,gres/gpu:h100=2,gres/gpu=2,mem=16G,node=1",
    "NodeList": "g01", "WorkDir": "/home/ana", "JobName": "a|b; $(rm -rf /)",
    "SubmitLine": "salloc --comment='x | y'",
}
step = dict(rows, JobID=f"{n}.interactive", JobIDRaw=f"{n}.interactive")
out = [rows, step]
if "--state=CA" in sys.argv and os.environ.get("FAKE_SACCT_HELD"):
    # real sacct lists a held-then-cancelled job only when asked for a state
    out.append(dict(rows, JobID=str(n + 100), JobIDRaw=str(n + 100), State="CANCELLED by 1001",
                    Eligible="Unknown", Start=day + "T10:00:00", End=day + "T10:00:00",
                    ElapsedRaw="0", AllocTRES="", NodeList="None assigned",
                    JobName="held\nname", SubmitLine="sbatch -H --gpus=1"))
if "--noheader" not in sys.argv:
    sys.stdout.write(d.join(fields) + "\n")
for r in out:
    sys.stdout.write(d.join(r.get(f, "") for f in fields) + "\n")
"""


@pytest.fixture
def fake_sacct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    prog = bindir / "sacct"
    prog.write_text(FAKE, encoding="utf-8")
    prog.chmod(0o755)
    log = tmp_path / "argv.jsonl"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SACCT_LOG", str(log))
    monkeypatch.setenv("SACCT_FORMAT", "JobID,State")  # must not leak into our call
    return log


def _calls(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _cfg(**kw: object) -> SacctWindowConfig:
    return SacctWindowConfig(start=dt.datetime(2024, 1, 1), end=dt.datetime(2024, 1, 4), **kw)  # type: ignore[arg-type]


def test_windows_cover_the_range_in_day_steps_with_a_short_last_one() -> None:
    cfg = SacctWindowConfig(
        dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 3, 12), dt.timedelta(days=1)
    )
    assert windows(cfg)[-1] == (dt.datetime(2024, 1, 3), dt.datetime(2024, 1, 3, 12))
    assert len(windows(cfg)) == 3
    with pytest.raises(UsageError, match="--end"):
        windows(SacctWindowConfig(dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 1)))


def test_sacct_runs_per_window_with_an_argument_list_utc_and_a_unique_delimiter(
    fake_sacct: Path, db_path: Path
) -> None:
    summaries = ingest_sacct(db_path, _cfg())
    calls = _calls(fake_sacct)
    assert len(calls) == 6 and len(summaries) == 3  # per window: all jobs, then -s CA
    assert all("--noheader" in c["argv"] and "--state=CA" in c["argv"] for c in calls[1::2])  # type: ignore[operator]
    argv = calls[0]["argv"]
    assert isinstance(argv, list)
    assert f"--delimiter={DELIMITER}" in argv and "--parsable2" in argv and "--duplicates" in argv
    assert "--starttime=2024-01-01T00:00:00" in argv and "--endtime=2024-01-02T00:00:00" in argv
    assert f"--format={','.join(SACCT_FIELDS)}" in argv
    assert SACCT_FIELDS[-1] == "SubmitLine" and SACCT_FIELDS[-2] == "JobName"  # free text last
    assert calls[0]["TZ"] == "UTC" and calls[0]["fmt"] == "standard"
    assert calls[0]["sacct_format"] is None
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute(
        "SELECT job_id, job_name, submit_line, is_interactive, gpus FROM jobs ORDER BY job_id"
    ).fetchall()
    sources = [
        r[0] for r in con.execute("SELECT source FROM ingests ORDER BY ingest_id").fetchall()
    ]
    con.close()
    assert rows[0] == ("1", "a|b; $(rm -rf /)", "salloc --comment='x | y'", True, 2)
    assert len(rows) == 3
    assert sources[0] == "sacct:2024-01-01T00:00:00/2024-01-02T00:00:00"


def test_a_rerun_skips_finished_windows_and_resumes_after_a_failure(
    fake_sacct: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SACCT_FAIL_AT", "2024-01-02")
    with pytest.raises(ExternalToolError, match="exited with 1: sacct: error: slurmdbd"):
        ingest_sacct(db_path, _cfg())
    assert len(_calls(fake_sacct)) == 3  # day 1 loaded (two passes), day 2 failed
    monkeypatch.setenv("FAKE_SACCT_FAIL_AT", "never")
    again = ingest_sacct(db_path, _cfg())
    starts = [c["argv"] for c in _calls(fake_sacct)[3::2]]  # the main pass of days 2 and 3
    assert [a[7] for a in starts] == [  # type: ignore[index]
        "--starttime=2024-01-02T00:00:00",
        "--starttime=2024-01-03T00:00:00",
    ]
    assert len(again) == 2
    con = duckdb.connect(str(db_path), read_only=True)
    assert con.execute("SELECT count(*) FROM jobs").fetchone() == (3,)
    con.close()


def test_a_second_pass_with_state_ca_adds_held_then_cancelled_jobs_once(
    fake_sacct: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SACCT_HELD", "1")
    summaries = ingest_sacct(db_path, _cfg())
    assert [(s.rows_read, s.lines_read, s.inserted, s.rejected) for s in summaries] == [
        (2, 3, 2, 0)
    ] * 3  # the job both passes list is read once; the held one's name spans two lines
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute(
        "SELECT job_id, state, cpus, nnodes, gpus, job_name FROM jobs ORDER BY job_id_raw"
    ).fetchall()
    con.close()
    assert rows[:3] == [
        ("1", "COMPLETED", 4, 1, 2, "a|b; $(rm -rf /)"),
        ("2", "COMPLETED", 4, 1, 2, "a|b; $(rm -rf /)"),
        ("3", "COMPLETED", 4, 1, 2, "a|b; $(rm -rf /)"),
    ]
    assert rows[3:] == [(str(n), "CANCELLED", None, None, 0, "held\nname") for n in (101, 102, 103)]


def test_a_missing_sacct_is_an_external_tool_error_with_the_fix(db_path: Path) -> None:
    with pytest.raises(ExternalToolError, match="--sacct-bin"):
        ingest_sacct(db_path, _cfg(sacct_bin="/nonexistent/sacct"))


def test_ingest_command_sacct_mode(cli, fake_sacct: Path, db_path: Path) -> None:
    code, out, err = cli(
        "ingest",
        "--sacct",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-03",
        "--db",
        str(db_path),
        "--format",
        "json",
    )
    assert code == 0, err
    assert [d["inserted"] for d in json.loads(out)] == [1, 1]
    code, _, err = cli("ingest", "--sacct", "--db", str(db_path))
    assert code == 2 and "--start" in err


def _sandbox_ready() -> str | None:
    if not os.environ.get("SLURM_CONF") or shutil.which("sacct") is None:
        return "no Slurm sandbox: run `scripts/slurm-sandbox start` and `eval $(scripts/slurm-sandbox env)`"
    probe = subprocess.run(
        ["sacct", "-X", "-n", "--starttime=now-1hours"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return f"sacct cannot reach slurmdbd: {probe.stderr.decode(errors='replace').strip()[:200]}"
    return None


@pytest.mark.slurm
def test_real_sacct_of_the_sandbox_loads(db_path: Path) -> None:
    reason = _sandbox_ready()
    if reason:
        pytest.skip(f"SKIPPED LOUDLY: {reason}")
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    cfg = SacctWindowConfig(start=now - dt.timedelta(days=2), end=now + dt.timedelta(hours=1))
    summaries = ingest_sacct(db_path, cfg, IngestOptions())
    assert summaries and all(s.rejected == 0 for s in summaries)
    con = duckdb.connect(str(db_path), read_only=True)
    gpu_rows = con.execute(
        "SELECT count(*) FROM jobs WHERE gpus > 0 AND gpu_type IS NOT NULL AND cpus > 0"
    ).fetchone()
    salloc = con.execute(
        "SELECT bool_and(is_interactive) FROM jobs WHERE submit_line LIKE 'salloc%'"
    ).fetchone()
    con.close()
    if gpu_rows == (0,):
        pytest.skip("SKIPPED LOUDLY: the sandbox ran no GPU job in the last two days")
    assert gpu_rows is not None and gpu_rows[0] > 0
    assert salloc in ((None,), (True,))
