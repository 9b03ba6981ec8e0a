"""Slurm's jobcomp/filetxt log: one ``Key=Value`` line per finished job (research §3.7).

Owns splitting such lines into records of canonical sacct fields. Values may contain spaces
(Name, WorkDir are written unescaped), so a line is cut only before a known key. Times are
slurmctld local time (``--tz``). ``Tres=`` (older files: ``Gres=``) is the *requested* TRES;
``ProcCnt`` is the allocated CPU count, so the allocation is taken as ProcCnt CPUs plus the
requested GPUs (documented in docs/ingest.md).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import BinaryIO

from advisor.ingest.records import JOB_RECORD_FIELDS, Reject

KEYS = (
    "JobId",
    "UserId",
    "GroupId",
    "Name",
    "JobState",
    "Partition",
    "TimeLimit",
    "StartTime",
    "EndTime",
    "NodeList",
    "NodeCnt",
    "ProcCnt",
    "WorkDir",
    "ReservationName",
    "Tres",
    "Gres",
    "Account",
    "QOS",
    "WcKey",
    "Cluster",
    "SubmitTime",
    "EligibleTime",
    "ArrayJobId",
    "ArrayTaskId",
    "HetJobId",
    "HetJobOffset",
    "DerivedExitCode",
    "ExitCode",
)
_KEY_RE = re.compile(r"(?:^|(?<= ))(" + "|".join(KEYS) + r")=")
# The fields a jobcomp line carries: the job record's, with the uid (from UserId), ProcCnt's CPUs
# and the Gres.
_PRESENT = JOB_RECORD_FIELDS | {"uid", "ncpus", "allocgres"}


def repeated_key(line: str) -> str | None:
    """The first known key that appears twice in a line, or None. Slurm writes each key once,
    but Name and WorkDir unescaped: a job named ``a UserId=mallory(6666) JobId=31337`` carries
    Slurm's keys in its value, and no cut of such a line can tell which are Slurm's."""
    seen: set[str] = set()
    for m in _KEY_RE.finditer(line):
        if m.group(1) in seen:
            return m.group(1)
        seen.add(m.group(1))
    return None


_PREFIX_RE = re.compile(r"^JobId=\d+ UserId=\S* GroupId=\S* Name=")


def split_line(line: str) -> dict[str, str]:
    """``Key=Value`` pairs of one line, cut only before known keys."""
    marks = list(_KEY_RE.finditer(line))
    out: dict[str, str] = {}
    for i, m in enumerate(marks):
        stop = marks[i + 1].start() - 1 if i + 1 < len(marks) else len(line)
        out[m.group(1)] = line[m.end() : max(stop, m.end())].strip()
    return out


def _name_id(v: str | None) -> tuple[str | None, str | None]:
    if not v:
        return None, None
    m = re.fullmatch(r"(.*?)\((\d+)\)", v)
    return (m.group(1) or None, m.group(2)) if m else (v, None)


def _elapsed(start: str | None, end: str | None) -> str | None:
    try:
        if not start or not end:
            return None
        a = dt.datetime.fromisoformat(start)
        b = dt.datetime.fromisoformat(end)
    except ValueError:
        return None
    return str(int((b - a).total_seconds())) if b >= a else None


def _alloc_tres(tres: str | None, procs: str | None) -> str | None:
    """The allocation as TRES: ProcCnt CPUs plus the requested GPUs; empty for a job that was
    allocated nothing (ProcCnt=0: cancelled while pending), whatever it requested."""
    if tres is None and procs is None:
        return None
    if procs is not None and procs.strip() == "0":
        return ""
    parts = [p for p in (tres or "").split(",") if p and not p.startswith("cpu=")]
    if procs:
        parts.insert(0, f"cpu={procs}")
    return ",".join(parts)


def records(
    fh: BinaryIO,
) -> tuple[list[dict[str, str | int | None]], list[Reject], set[str], int]:
    """Records of a jobcomp log, rejects (lines without JobId=), and the physical line count."""
    out: list[dict[str, str | int | None]] = []
    rejects: list[Reject] = []
    n = 0
    for n, raw in enumerate(fh, start=1):  # noqa: B007
        line = raw.rstrip(b"\r\n").decode("utf-8", errors="replace")
        if not line.strip():
            continue
        kv = split_line(line)
        if "JobId" not in kv or not line.startswith("JobId="):
            rejects.append(Reject(n, line, "not a jobcomp line (JobId=... Key=Value ...)"))
            continue
        twice = repeated_key(line)
        if twice is not None:
            rejects.append(
                Reject(
                    n,
                    line,
                    f"the key {twice} appears twice: a value Slurm writes unescaped (Name, "
                    "WorkDir) holds Slurm's keys, so which are the job's cannot be told; load "
                    "this job from sacct instead",
                    field=twice,
                )
            )
            continue
        if "Name" in kv and not _PREFIX_RE.match(line):
            rejects.append(
                Reject(
                    n,
                    line,
                    "JobId, UserId and GroupId are not where Slurm writes them, before Name",
                    field="Name",
                )
            )
            continue
        user, uid = _name_id(kv.get("UserId"))
        group, _gid = _name_id(kv.get("GroupId"))
        jid = kv["JobId"]
        display = jid
        if kv.get("ArrayJobId") and kv.get("ArrayTaskId") not in (None, "", "4294967294"):
            display = f"{kv['ArrayJobId']}_{kv['ArrayTaskId']}"
        elif kv.get("HetJobId") and kv.get("HetJobOffset"):
            display = f"{kv['HetJobId']}+{kv['HetJobOffset']}"
        tl = kv.get("TimeLimit")
        tres = kv.get("Tres")
        out.append(
            {
                "jobid": display,
                "jobidraw": jid,
                "cluster": kv.get("Cluster"),
                "partition": kv.get("Partition"),
                "qos": kv.get("QOS"),
                "account": kv.get("Account"),
                "group": group,
                "user": user,
                "uid": uid,
                "jobname": kv.get("Name"),
                "state": kv.get("JobState"),
                "exitcode": kv.get("ExitCode"),
                "submit": kv.get("SubmitTime"),
                "eligible": kv.get("EligibleTime"),
                "start": kv.get("StartTime"),
                "end": kv.get("EndTime"),
                "elapsedraw": _elapsed(kv.get("StartTime"), kv.get("EndTime")),
                "timelimitraw": tl if tl and tl.isdigit() else None,
                "nnodes": kv.get("NodeCnt"),
                "ncpus": kv.get("ProcCnt"),
                "alloctres": _alloc_tres(tres, kv.get("ProcCnt")) if tres is not None else None,
                "reqtres": tres,
                "allocgres": kv.get("Gres"),
                "nodelist": kv.get("NodeList"),
                "workdir": kv.get("WorkDir"),
                "line_no": n,
                "_raw": line,
            }
        )
    out, cut = _without_cut_lines(out)
    return out, sorted([*rejects, *cut], key=lambda r: r.line_no or 0), set(_PRESENT), n


def _without_cut_lines(
    out: list[dict[str, str | int | None]],
) -> tuple[list[dict[str, str | int | None]], list[Reject]]:
    """Records whose keys stop early: filetxt writes every key of a line in one order, so a line
    whose keys are a shorter prefix of the fullest line's was cut mid-write (a crash, a full
    disk): its last value is cut too, and the keys after it (SubmitTime, ExitCode) are missing,
    which once stored such a job as submitted in 1970 with no GPUs. Rejected naming the key
    the line ends in."""
    orders = [split_line(str(r["_raw"])) for r in out]
    widest = max((list(kv) for kv in orders), key=len, default=[])
    kept: list[dict[str, str | int | None]] = []
    cut: list[Reject] = []
    for record, kv in zip(out, orders, strict=True):
        keys = list(kv)
        if keys and len(keys) < len(widest) and widest[: len(keys)] == keys:
            missing = ", ".join(widest[len(keys) :])
            cut.append(
                Reject(
                    int(record["line_no"] or 0),
                    str(record["_raw"]),
                    f"the line ends inside {keys[-1]} (cut mid-write: {missing} missing)",
                    field=keys[-1],
                )
            )
        else:
            kept.append(record)
    return kept, cut
