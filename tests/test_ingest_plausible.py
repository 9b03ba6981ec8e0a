"""Issue 30: one bad or implausible value costs its record, never the file, and no input gives
a traceback. Each case is one field of an ordinary ``sacct -P`` line (or JSON job) replaced;
text files load both ways (bulk and careful) and must store the same rows and rejects. The
bounds are the ones docs/ingest.md states ("Plausible values")."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pytest

from advisor.errors import InputError
from advisor.ingest import IngestOptions, careful, ingest_files

HEADER = (
    "JobID|JobIDRaw|Cluster|State|Submit|Start|End|ElapsedRaw|TimelimitRaw|NCPUS|AllocTRES"
    "|ReqMem|JobName"
)
GOOD = {
    "JobID": "{i}",
    "JobIDRaw": "{i}",
    "Cluster": "c",
    "State": "COMPLETED",
    "Submit": "2024-01-01T00:00:00",
    "Start": "2024-01-01T00:00:01",
    "End": "2024-01-01T01:00:01",
    "ElapsedRaw": "3600",
    "TimelimitRaw": "120",
    "NCPUS": "4",
    "AllocTRES": "cpu=4,mem=8G,gres/gpu=1,billing=4",
    "ReqMem": "8G",
    "JobName": "train",
}


def _line(i: int, **changed: str) -> str:
    values = {**GOOD, **changed}
    return "|".join(values[k].replace("{i}", str(i)) for k in HEADER.split("|"))


def _load(db: Path, path: Path, strategy: str) -> dict[str, Any]:
    error = None
    try:
        ingest_files(db, [path], replace(IngestOptions(), strategy=strategy))
    except InputError as exc:
        error = str(exc)
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            "jobs": con.execute(
                "SELECT * EXCLUDE (ingest_id, updated_at) FROM jobs ORDER BY ALL"
            ).fetchall(),
            "rejects": con.execute(
                "SELECT line_no, field, reason FROM rejects WHERE line_no IS NOT NULL ORDER BY ALL"
            ).fetchall(),
            "error": error,
        }
    finally:
        con.close()


def _both(tmp_path: Path, lines: list[str], header: str = HEADER) -> dict[str, Any]:
    """Load a text file both ways; they must agree. Returns the careful way's result."""
    path = tmp_path / "f.txt"
    path.write_bytes(("\n".join([header, *lines]) + "\n").encode("utf-8", "surrogateescape"))
    careful = _load(tmp_path / "careful.duckdb", path, "careful")
    bulk = _load(tmp_path / "bulk.duckdb", path, "bulk")
    assert bulk == careful
    return careful


def _ids(result: dict[str, Any], tmp_path: Path) -> list[int]:
    con = duckdb.connect(str(tmp_path / "careful.duckdb"), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT job_id_raw FROM jobs ORDER BY 1").fetchall()]
    finally:
        con.close()


BAD_VALUES = [
    # B7: ReqMem past BIGINT refused the whole file with DuckDB's conversion error
    ("ReqMem", "99999999999999999999M", "ReqMem"),
    ("ReqMem", "1e30M", "ReqMem"),
    ("AllocTRES", "cpu=4,mem=99999999999999999999M,gres/gpu=1", "AllocTRES"),
    # B8: INT64's maximum overflowed the minutes-to-seconds product (a traceback)
    ("ElapsedRaw", "9223372036854775807", "ElapsedRaw"),
    ("TimelimitRaw", "9223372036854775807", "TimelimitRaw"),
    # C12: stored with exit 0 and no reject
    ("ElapsedRaw", str(100 * 365 * 86400), "ElapsedRaw"),
    ("TimelimitRaw", str(2**31), "TimelimitRaw"),
    ("AllocTRES", "cpu=4,gres/gpu=1,billing=" + "9" * 400, "AllocTRES"),
    ("Submit", "0001-01-01T00:00:00", "Submit"),
    ("Submit", "9999-12-31T23:59:59", "Submit"),
    ("Submit", "1969-12-31T23:59:59", "Submit"),
    ("Submit", "2100-01-01T00:00:00", "Submit"),
    ("JobName", "tr\x00ain", "JobName"),
]


@pytest.mark.parametrize(("field", "value", "named"), BAD_VALUES)
def test_one_implausible_value_rejects_its_record_and_the_rest_load_both_ways(
    tmp_path: Path, field: str, value: str, named: str
) -> None:
    result = _both(tmp_path, [_line(1), _line(2, **{field: value}), _line(3)])
    assert result["error"] is None
    assert _ids(result, tmp_path) == [1, 3]
    [(line_no, got_field, reason)] = result["rejects"]
    assert (line_no, got_field) == (3, named) and reason


@pytest.mark.parametrize("submit", ["9999-12-31T23:59:59", "0001-01-01T00:00:00"])
def test_a_file_of_one_record_with_a_submit_out_of_range_is_refused_by_name_not_a_traceback(
    tmp_path: Path, submit: str
) -> None:
    """The bulk path computed a day around the file's submit range in Python (OverflowError)."""
    result = _both(tmp_path, [_line(2, Submit=submit)])
    assert result["jobs"] == []
    assert result["error"] is not None and "line 2, field Submit" in result["error"]
    assert result["rejects"][0][2].startswith("outside the plausible time window")


def test_large_but_plausible_values_still_load(tmp_path: Path) -> None:
    result = _both(
        tmp_path,
        [
            _line(1, ElapsedRaw=str(3 * 365 * 86400), TimelimitRaw=str(365 * 24 * 60)),
            _line(2, ReqMem="2000000Gn", AllocTRES="cpu=4,mem=2T,gres/gpu=8,billing=12345.5"),
            _line(3, TimelimitRaw="UNLIMITED", Submit="2000-01-01T00:00:00"),
        ],
    )
    assert result["rejects"] == [] and _ids(result, tmp_path) == [1, 2, 3]


def _json_job(i: int, **time: Any) -> dict[str, Any]:
    return {
        "job_id": i,
        "name": "train",
        "cluster": "c",
        "state": {"current": ["COMPLETED"]},
        "time": {
            "submission": 1704067200,
            "start": 1704067201,
            "end": 1704070801,
            "elapsed": 3600,
            "limit": {"set": True, "infinite": False, "number": 120},
            **time,
        },
        "tres": {"allocated": [{"type": "cpu", "count": 4}], "requested": []},
    }


def _json_file(tmp_path: Path, jobs: list[Any], prefix: bytes = b"") -> Path:
    doc = {"meta": {"plugin": {"data_parser": "data_parser/v0.0.42"}}, "jobs": jobs}
    path = tmp_path / "f.json"
    path.write_bytes(prefix + json.dumps(doc).encode())
    return path


def _load_json(tmp_path: Path, path: Path) -> dict[str, Any]:
    return _load(tmp_path / "j.duckdb", path, "careful")


@pytest.mark.parametrize(
    "bad",
    [
        {"time": {"elapsed": float("inf")}},  # B9: 'cannot convert float infinity to integer'
        {"time": {"elapsed": float("nan")}},
        {"job_id": 1.5},  # C15: the record vanished (neither stored nor rejected)
        {"required": {"memory_per_node": {"set": True, "infinite": False, "number": 1e30}}},
    ],
    ids=["elapsed-inf", "elapsed-nan", "job-id-1.5", "memory-1e30"],
)
def test_a_json_job_with_a_damaged_number_is_rejected_and_the_others_load(
    tmp_path: Path, bad: dict[str, Any]
) -> None:
    job = _json_job(2)
    for key, value in bad.items():
        job[key] = {**job[key], **value} if isinstance(value, dict) and key in job else value
    path = _json_file(tmp_path, [_json_job(1), job, _json_job(3)])
    result = _load_json(tmp_path, path)
    assert result["error"] is None
    assert sorted(r[1] for r in result["jobs"]) == [1, 3]
    [(line_no, _field, _reason)] = result["rejects"]
    assert line_no == 2


def test_a_json_job_nested_too_deeply_is_rejected_alone_without_a_recursion_error(
    tmp_path: Path,
) -> None:
    deep = {"job_id": 2, "comment": "DEEP"}
    path = _json_file(tmp_path, [_json_job(1), deep, _json_job(3)])
    text = path.read_text().replace('"DEEP"', "[" * 100_000 + "]" * 100_000)
    path.write_text(text)
    result = _load_json(tmp_path, path)
    assert result["error"] is None
    assert sorted(r[1] for r in result["jobs"]) == [1, 3]
    [(line_no, _field, reason)] = result["rejects"]
    assert line_no == 2 and "nested too deeply" in reason


def test_a_json_document_starting_with_a_byte_order_mark_is_read_as_json(tmp_path: Path) -> None:
    path = _json_file(tmp_path, [_json_job(1)], prefix=b"\xef\xbb\xbf")
    result = _load_json(tmp_path, path)
    assert result["error"] is None and [r[1] for r in result["jobs"]] == [1]


@pytest.mark.parametrize("jobs", [3, 10])
def test_a_text_file_with_carriage_return_line_ends_is_refused_by_name(
    tmp_path: Path, jobs: int
) -> None:
    """It loaded nothing and rejected nothing (3 jobs) or ran out of memory (10)."""
    path = tmp_path / "cr.txt"
    path.write_bytes("\r".join([HEADER, *(_line(i) for i in range(1, jobs + 1))]).encode() + b"\r")
    with pytest.raises(InputError, match="carriage return alone"):
        ingest_files(tmp_path / "cr.duckdb", [path])


def test_a_json_start_of_no_val_for_a_job_cancelled_while_pending_is_no_start(
    tmp_path: Path,
) -> None:
    """Issue 30 A1: Slurm 25.11 writes NO_VAL (4294967294); it read as 2106 and was rejected."""
    job = _json_job(1, start=4294967294, end=1704067300, elapsed=0)
    job["state"] = {"current": ["CANCELLED"]}
    result = _load_json(tmp_path, _json_file(tmp_path, [job]))
    assert result["error"] is None and result["rejects"] == []
    con = duckdb.connect(str(tmp_path / "j.duckdb"), read_only=True)
    try:
        assert con.execute('SELECT "start" FROM jobs').fetchall() == [(None,)]
    finally:
        con.close()


ADVISOR = shutil.which("advisor") or str(Path(sys.executable).parent / "advisor")


def _advisor(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    return subprocess.run(
        [ADVISOR, *args], capture_output=True, text=True, env=env, check=False, timeout=120
    )


def test_one_failed_file_of_several_costs_that_file_only(tmp_path: Path) -> None:
    """Issue 30 A2: the files after a failed one were not loaded."""
    first, empty, last = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    first.write_text(f"{HEADER}\n{_line(1)}\n")
    empty.write_bytes(b"")
    last.write_text(f"{HEADER}\n{_line(3)}\n")
    db = tmp_path / "batch.duckdb"
    args = ("ingest", str(first), str(empty), str(last), "--db", str(db), "--format", "json")
    proc = _advisor(*args)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: {empty}: the file is empty")
    outcomes = json.loads(proc.stdout)
    assert [(o["source"], o["status"]) for o in outcomes] == [
        (str(first), "done"),
        (str(empty), "failed"),
        (str(last), "done"),
    ]
    assert "the file is empty" in outcomes[1]["error"] and outcomes[2]["inserted"] == 1
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT job_id_raw FROM jobs ORDER BY 1").fetchall() == [(1,), (3,)]
    finally:
        con.close()


USAGE_HEADER = HEADER + "|TotalCPU|CPUTimeRAW|TRESUsageInTot|TRESUsageInMax"
USAGE = {
    "TotalCPU": "00:30:00",
    "CPUTimeRAW": "14400",
    "TRESUsageInTot": "cpu=00:30:00,gres/gpuutil=80",
    "TRESUsageInMax": "cpu=00:30:00,mem=2G,gres/gpuutil=90,gres/gpumem=1G",
}


def _usage_line(i: int, **changed: str) -> str:
    values = {**GOOD, **USAGE, **changed}
    return "|".join(values[k].replace("{i}", str(i)) for k in USAGE_HEADER.split("|"))


USAGE_FAULTS = [
    # A5: a duration in CPUTimeRAW rejected the whole job, its CPUs, GPUs and times
    ({"CPUTimeRAW": "01:09:18"}, "CPUTimeRAW", "cpu_time_alloc_s", "whole number"),
    ({"TotalCPU": "abc"}, "TotalCPU", "cpu_used_s", "CPU time"),
    # (no peak either: the mean falls back to the peak where the total is unknown)
    (
        {"TRESUsageInTot": "gres/gpuutil=x", "TRESUsageInMax": "mem=2G"},
        "TRESUsageInTot",
        "gpu_util_mean_pct",
        "gpuutil",
    ),
    # C12: implausible usage was stored as measured
    (
        {"TRESUsageInMax": "mem=2G,gres/gpuutil=5000"},
        "TRESUsageInMax",
        "gpu_util_max_pct",
        "gres/gpuutil 5000",
    ),
    ({"TRESUsageInMax": "mem=-1M,gres/gpuutil=90"}, "TRESUsageInMax", "mem_used_max_mb", "mem -1M"),
    ({"TRESUsageInMax": "mem=nan,gres/gpuutil=90"}, "TRESUsageInMax", "mem_used_max_mb", "mem nan"),
    ({"TRESUsageInMax": "mem=infG"}, "TRESUsageInMax", "mem_used_max_mb", "mem infG"),
    (
        {"TRESUsageInMax": "mem=2G,gres/gpumem=-5M"},
        "TRESUsageInMax",
        "gpu_mem_max_mb",
        "gres/gpumem -5M",
    ),
]


@pytest.mark.parametrize(("changes", "named", "column", "says"), USAGE_FAULTS)
def test_a_bad_usage_value_nulls_that_field_keeps_the_job_and_leaves_a_reject_both_ways(
    tmp_path: Path, changes: dict[str, str], named: str, column: str, says: str
) -> None:
    lines = [_usage_line(1), _usage_line(2, **changes), _usage_line(3)]
    result = _both(tmp_path, lines, USAGE_HEADER)
    assert result["error"] is None
    assert _ids(result, tmp_path) == [1, 2, 3]
    [(line_no, got_field, reason)] = result["rejects"]
    assert (line_no, got_field) == (3, named) and says in reason and "stored" in reason
    con = duckdb.connect(str(tmp_path / "careful.duckdb"), read_only=True)
    try:
        rows = con.execute(
            f"SELECT job_id_raw, cpus, gpus, elapsed_s, {column} FROM jobs ORDER BY 1"
        ).fetchall()
        [(rejected,)] = con.execute("SELECT rejected FROM ingests").fetchall()
    finally:
        con.close()
    assert [r[:4] for r in rows] == [(i, 4, 1, 3600) for i in (1, 2, 3)]
    assert rows[1][4] is None and rows[0][4] is not None
    assert rejected == 0  # the job was stored: the reject row shows the fault, costs no line


def test_the_bulk_way_stores_a_job_with_a_usage_fault_itself_with_its_steps_folded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bulk insert leaves such a line out and stores it after the read that finds it for
    `rejects`: no hand-over to the careful way, and its step still folds into it."""
    careful_reads: list[object] = []
    real_read = careful.read
    monkeypatch.setattr(
        careful, "read", lambda *a, **k: careful_reads.append(a) or real_read(*a, **k)
    )
    step = _usage_line(2, TotalCPU="00:10:00").replace("2|2|", "2.batch|2.batch|", 1)
    lines = [_usage_line(1), _usage_line(2, TotalCPU="99-00:00:00"), step, _usage_line(3)]
    result = _both(tmp_path, lines, USAGE_HEADER)
    assert len(careful_reads) == 1  # the careful load of _both alone
    assert result["rejects"] == [(3, "TotalCPU", result["rejects"][0][2])]
    con = duckdb.connect(str(tmp_path / "bulk.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT job_id_raw, cpu_used_s, interactive_evidence FROM jobs ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    # the implausible TotalCPU NULL, the step's 600 s in its place, its verdict from the step
    assert rows == [(1, 1800.0, None), (2, 600.0, "step"), (3, 1800.0, None)]


def test_the_summary_counts_usage_faults_apart_and_warns(tmp_path: Path) -> None:
    path = tmp_path / "u.txt"
    path.write_text(f"{USAGE_HEADER}\n{_usage_line(1, CPUTimeRAW='01:09:18')}\n")
    [summary] = ingest_files(tmp_path / "u.duckdb", [path])
    assert (summary.inserted, summary.rejected, summary.usage_faults) == (1, 0, 1)
    assert any("usage field" in w for w in summary.warnings)


@pytest.mark.parametrize(
    ("submit", "stored"),
    [
        ("2024-03-01T10:00:00+02:00", dt.datetime(2024, 3, 1, 8, 0)),
        ("2024-03-01T10:00:00-0530", dt.datetime(2024, 3, 1, 15, 30)),
        ("2024-03-01T10:00:00Z", dt.datetime(2024, 3, 1, 10, 0)),
        ("2024-03-01T10:00:00", dt.datetime(2024, 3, 1, 10, 0)),
    ],
)
def test_a_time_with_a_utc_offset_is_stored_at_its_instant_in_utc_both_ways(
    tmp_path: Path, submit: str, stored: dt.datetime
) -> None:
    """Issue 30 C14: the offset was dropped (stored 2 hours off)."""
    times = {"Start": "2024-03-01T12:00:00", "End": "2024-03-01T13:00:00"}
    result = _both(tmp_path, [_line(1, Submit=submit, **times)])
    assert result["error"] is None and result["rejects"] == []
    con = duckdb.connect(str(tmp_path / "careful.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT submit FROM jobs").fetchall() == [(stored,)]
    finally:
        con.close()


def _jobcomp_line(i: int, **changed: str) -> str:
    values = {
        "JobId": str(i),
        "UserId": "alice(1001)",
        "GroupId": "alice(1001)",
        "Name": "train",
        "JobState": "COMPLETED",
        "Partition": "gpu",
        "TimeLimit": "60",
        "StartTime": "2024-01-01T00:00:01",
        "EndTime": "2024-01-01T00:00:02",
        "NodeList": "n1",
        "NodeCnt": "1",
        "ProcCnt": "2",
        "WorkDir": "/home/alice",
        "ReservationName": "",
        "Tres": "cpu=2,mem=4G,node=1,billing=2,gres/gpu=1",
        "Account": "phys",
        "QOS": "normal",
        "WcKey": "",
        "Cluster": "c",
        "SubmitTime": "2024-01-01T00:00:00",
        "EligibleTime": "2024-01-01T00:00:00",
        "DerivedExitCode": "0:0",
        "ExitCode": "0:0",
        **changed,
    }
    return " ".join(f"{k}={v}" for k, v in values.items())


def _load_jobcomp(tmp_path: Path, lines: list[str]) -> dict[str, Any]:
    path = tmp_path / "jobcomp.log"
    path.write_text("\n".join(lines) + "\n")
    return _load(tmp_path / "jc.duckdb", path, "careful")


def test_a_jobcomp_line_cut_mid_write_is_rejected_naming_the_key_it_ends_in(
    tmp_path: Path,
) -> None:
    """Issue 30 C13: it was stored as a job submitted in 1970 with 0 GPUs."""
    full = _jobcomp_line(2)
    cut = full[: full.index("Tres=") + len("Tres=cpu=2,me")]
    result = _load_jobcomp(tmp_path, [_jobcomp_line(1), cut, _jobcomp_line(3)])
    assert result["error"] is None
    assert sorted(r[1] for r in result["jobs"]) == [1, 3]
    [(line_no, field, reason)] = result["rejects"]
    assert (line_no, field) == (2, "Tres") and "cut mid-write" in reason
    assert "SubmitTime" in reason


def test_a_jobcomp_start_in_1970_for_a_job_that_ran_a_second_is_rejected(
    tmp_path: Path,
) -> None:
    line = _jobcomp_line(2, StartTime="1970-01-01T00:00:00", EndTime="1970-01-01T00:00:01")
    result = _load_jobcomp(tmp_path, [_jobcomp_line(1), line])
    assert sorted(r[1] for r in result["jobs"]) == [1]
    [(line_no, field, reason)] = result["rejects"]
    assert (line_no, field) == (2, "Start") and reason.startswith("outside the plausible")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"time": {"submission": "yesterday"}}, "Submit"),
        ({"time": {"submission": -100}}, "Submit"),
        ({"time": {"start": "soon"}}, "Start"),
        ({"tres": {"allocated": [{"type": "cpu", "count": -4}], "requested": []}}, "AllocTRES"),
        ({"tres": {"allocated": "cpu=4", "requested": []}}, "tres.allocated"),
    ],
    ids=["submit-word", "submit-negative", "start-word", "cpus-negative", "tres-a-string"],
)
def test_a_json_value_of_the_wrong_kind_rejects_its_job_naming_the_field(
    tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    """Issue 30 C15: these were stored as submitted in 1970, or with CPUs NULL, silently."""
    job = _json_job(2)
    for key, value in change.items():
        job[key] = {**job[key], **value}
    result = _load_json(tmp_path, _json_file(tmp_path, [_json_job(1), job, _json_job(3)]))
    assert result["error"] is None
    assert sorted(r[1] for r in result["jobs"]) == [1, 3]
    [(line_no, got, _reason)] = result["rejects"]
    assert (line_no, got) == (2, field)


def _controller_job(i: int) -> dict[str, Any]:
    """A job as slurmctld shows it (data_parser's job_info: squeue/scontrol --json)."""
    return {
        "job_id": i,
        "name": "train",
        "job_state": ["RUNNING"],
        "partition": "gpu",
        "gres_detail": ["gpu:h100:1(IDX:0)"],
        "tres_alloc_str": "cpu=4,mem=8G,node=1,billing=4,gres/gpu=1",
        "submit_time": {"set": True, "infinite": False, "number": 1704067200},
        "cpus": {"set": True, "infinite": False, "number": 4},
    }


@pytest.mark.parametrize(
    "meta",
    [
        {"plugin": {"type": "openapi/slurmctld", "name": "Slurm OpenAPI slurmctld"}},
        {"plugin": {"type": "", "data_parser": "data_parser/v0.0.41"}, "command": ["squeue"]},
        {"plugin": {"type": "", "data_parser": "data_parser/v0.0.42"}, "command": []},
    ],
    ids=["slurmrestd", "squeue", "scontrol-shape-only"],
)
def test_slurmctlds_view_of_current_jobs_is_refused_naming_what_it_is(
    tmp_path: Path, meta: dict[str, Any]
) -> None:
    """Issue 30 A3: it was taken for sacct --json and stored as empty jobs."""
    path = tmp_path / "squeue.json"
    path.write_text(json.dumps({"meta": meta, "jobs": [_controller_job(1), _controller_job(2)]}))
    result = _load_json(tmp_path, path)
    assert result["jobs"] == []
    assert result["error"] is not None and "slurmctld's view of current jobs" in result["error"]
    assert "use sacct --json" in result["error"]


def test_a_running_job_of_slurm_22_05_json_keeps_its_start(tmp_path: Path) -> None:
    """Issue 30 A4: with time.end 0, start = end - elapsed left it with no start."""
    running = _json_job(1, start=1704067201, end=0, elapsed=600)
    running["state"] = {"current": "RUNNING"}
    pending = _json_job(2, start=0, end=0, elapsed=0)
    pending["state"] = {"current": "PENDING"}
    done = _json_job(3)
    doc = {"meta": {"plugin": {"type": "openapi/dbv0.0.38"}}, "jobs": [running, pending, done]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    result = _load_json(tmp_path, path)
    assert result["error"] is None and result["rejects"] == []
    con = duckdb.connect(str(tmp_path / "j.duckdb"), read_only=True)
    try:
        got = con.execute('SELECT job_id_raw, "start" FROM jobs ORDER BY 1').fetchall()
    finally:
        con.close()
    assert got == [
        (1, dt.datetime(2024, 1, 1, 0, 0, 1)),
        (2, None),
        (3, dt.datetime(2024, 1, 1, 0, 0, 1)),  # end - elapsed, as before
    ]


def test_a_pending_job_holds_no_cpus_and_a_request_without_gpus_asked_for_none(
    tmp_path: Path,
) -> None:
    """Issue 30 A6: without AllocTRES a PENDING job got its AllocCPUS as CPUs, and a ReqTRES
    without GPUs gave req_gpus NULL."""
    header = "JobID|JobIDRaw|Cluster|State|Submit|Start|End|ElapsedRaw|AllocCPUS|ReqCPUS|ReqTRES"
    lines = [
        "1|1|c|PENDING|2024-01-01T00:00:00|Unknown|Unknown|0|4|4|cpu=4,mem=8G,node=1",
        "2|2|c|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T00:01:01|60|4|4"
        "|cpu=4,mem=8G,node=1,gres/gpu=2",
        "3|3|c|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T00:01:01|60|4|4"
        "|cpu=4,mem=8G,node=1",
    ]
    _both(tmp_path, lines, header)
    con = duckdb.connect(str(tmp_path / "careful.duckdb"), read_only=True)
    try:
        got = con.execute("SELECT job_id_raw, cpus, req_cpus, req_gpus FROM jobs ORDER BY 1")
        assert got.fetchall() == [(1, None, 4, 0), (2, 4, 4, 2), (3, 4, 4, 0)]
    finally:
        con.close()


def test_a_file_whose_accounting_records_no_gpus_is_warned_about_and_shown_in_status(
    tmp_path: Path,
) -> None:
    """Issue 30 A6: AccountingStorageTRES without gres/gpu stored GPU jobs with 0 GPUs,
    silently."""
    header = HEADER + "|ReqTRES|SubmitLine"
    asked = "cpu=4,mem=8G,node=1,gres/gpu=1"
    lines = [
        _line(i, AllocTRES="cpu=4,mem=8G,node=1,billing=4") + f"|{asked}|sbatch --gpus=1 x.sh"
        for i in (1, 2)
    ]
    path = tmp_path / "nogpu.txt"
    path.write_text("\n".join([header, *lines]) + "\n")
    db = tmp_path / "nogpu.duckdb"
    [summary] = ingest_files(db, [path])
    [warning] = [w for w in summary.warnings if "gres/gpu" in w]
    assert "2 jobs asked for GPUs" in warning and "0 GPUs" in warning
    proc = _advisor("data", "status", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert "warning: cluster c: no AllocTRES records gres/gpu" in proc.stderr
    # a file that records GPUs gets no such warning
    [fine] = ingest_files(tmp_path / "gpu.duckdb", [_write(tmp_path, [_line(1)])])
    assert not any("gres/gpu" in w for w in fine.warnings)


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "gpu.txt"
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    return path
