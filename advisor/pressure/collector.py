"""The node-side collector of CPU pressure: each Slurm job's (and step's) cgroup v2 ``cpu.pressure``,
``cpu.stat`` and ``cpuset.cpus.effective``, appended as one JSON line per cgroup to a spool file.

Standard library only and Python 3.7 or later (RHEL 8's, Debian 11's and Ubuntu 20.04's system
Pythons; tests check the syntax against 3.7 with vermin and run it under the oldest Python on the
test machine), so that a node can run this file as it is (``python3 collector.py ...``) without
the package; ``advisor pressure collect`` runs the same code. It never fails a job: every error
becomes one log line on stderr (or ``--log``), the exit code is always 0, one cgroup that cannot
be read costs only its own record, and the whole walk is bounded (``--max-ms``). It runs as root,
so it follows no symbolic link (neither a folder nor a file) and reads only regular files, never
a FIFO. The harness reads process waits with the PSI parser here too, so a bench phase and a
production job speak of pressure in the same words.

A record (schema ``advisor.pressure/1``) holds what was read and when; the share of time a job
stalled is computed at ingest, against the job's own start from the accounting data.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import json
import math
import os
import re
import socket
import stat
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "advisor.pressure/1"
# Slurm's cgroup/v2 plugin: <root>/system.slice/[<node>_]slurmstepd.scope/job_<id>/step_<name>.
# Names are matched whole (fullmatch: a trailing newline is no match) and in ASCII only.
JOB_DIR = re.compile(r"job_(?P<job>[1-9][0-9]{0,18})", re.ASCII)
# a Slurm job id as sacct prints it: no sign, no leading zero (0042 would fold onto job 42)
SLURM_JOB_ID = re.compile(r"[1-9][0-9]{0,18}", re.ASCII)
STEP_DIR = re.compile(r"step_(?P<step>[A-Za-z0-9_.]{1,64})", re.ASCII)
SCOPE_DIR = re.compile(r"(?:(?P<node>[A-Za-z0-9_.-]{1,255})_)?slurmstepd\.scope", re.ASCII)
# what a job id taken from a custom --job-dir-pattern may be (SLUIDs are alphanumeric)
JOB_ID = re.compile(r"[0-9A-Za-z]{1,64}", re.ASCII)
# A kernel counter is an unsigned 64-bit number of microseconds.
MAX_COUNTER = 2**64 - 1
MAX_CPUS = 1 << 20
DEFAULT_MAX_MS = 50.0
MAX_MAX_MS = 60_000.0
_NUMBER = re.compile(r"[0-9]{1,20}", re.ASCII)


def _counter(value: str, what: str) -> int:
    if not _NUMBER.fullmatch(value) or int(value) > MAX_COUNTER:
        raise ValueError(f"{what} {value[:30]!r} is not a 64-bit counter")
    return int(value)


def parse_pressure(text: str) -> dict[str, float]:
    """A PSI file's cumulative totals in seconds: ``{"some_s": ..., "full_s": ...}`` (``full``
    absent on kernels that only report ``some`` for CPU)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0] not in ("some", "full"):
            continue
        for item in parts[1:]:
            key, _, value = item.partition("=")
            if key == "total":
                out[f"{parts[0]}_s"] = _counter(value, "total") / 1e6
    if "some_s" not in out:
        raise ValueError("no 'some ... total=' line")
    return out


def parse_cpu_stat(text: str) -> dict[str, int]:
    """``cpu.stat``'s counters (``usage_usec``, ``nr_throttled``, ``throttled_usec``, ...)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip():
            out[key] = _counter(value.strip(), key)
    return out


def count_cpus(cpu_list: str) -> int | None:
    """How many CPUs a list such as ``0-3,8,10-11`` names; None for anything that is no CPU list
    (a range running backwards, a CPU number beyond any machine, text)."""
    total = 0
    for part in filter(None, cpu_list.strip().split(",")):
        lo, _, hi = part.partition("-")
        if not _NUMBER.fullmatch(lo) or (hi and not _NUMBER.fullmatch(hi)):
            return None
        first, last = int(lo), int(hi) if hi else int(lo)
        if not first <= last < MAX_CPUS:
            return None
        total += last - first + 1
    return total if 0 < total <= MAX_CPUS else None


@dataclass(frozen=True)
class JobCgroup:
    """One job's (or step's) cgroup found under the root."""

    path: Path
    job_id: str
    step: str | None  # None: the job's own cgroup; else Slurm's step name (batch, extern, 0, ...)
    node: str | None  # the node prefix of --enable-multiple-slurmd's scope, if any


class Deadline:
    """The walk's time budget: ``over()`` once ``max_ms`` have passed since it was made."""

    def __init__(self, max_ms: float) -> None:
        self.max_ms = max_ms
        self.t0 = time.monotonic()

    def over(self) -> bool:
        return (time.monotonic() - self.t0) * 1000 > self.max_ms


def _subdirs(d: Path, log: list[str], deadline: Deadline | None = None) -> Iterator[Path]:
    """The real folders in ``d``, in the order the directory lists them (a walk of 100,000 job
    folders reads from the first, within its bound); a symbolic link is never one. An unlistable
    folder is one log line and no children; the listing stops at the deadline."""
    try:
        with os.scandir(str(d)) as it:
            for n, entry in enumerate(it):
                if deadline is not None and n % 64 == 0 and deadline.over():
                    log.append(f"{d}: listing stopped at the time limit")
                    return
                try:
                    if entry.is_dir(follow_symlinks=False):
                        yield Path(entry.path)
                except OSError:
                    continue
    except OSError as exc:
        log.append(f"{d}: cannot list ({exc.strerror or exc})")


def _scopes(root: Path, log: list[str], deadline: Deadline) -> list[tuple[Path, str | None]]:
    """Slurm's ``[<node>_]slurmstepd.scope`` folders at the first of the top three levels of
    ``root`` that has any (a node's other services are not walked below it)."""
    scopes: list[tuple[Path, str | None]] = []
    frontier = [root]
    for _ in range(3):
        nxt = []
        for d in frontier:
            for c in sorted(_subdirs(d, log, deadline)):
                m = SCOPE_DIR.fullmatch(c.name)
                if m:
                    scopes.append((c, m.group("node")))
                else:
                    nxt.append(c)
        if scopes or deadline.over():  # Slurm's scopes sit side by side: nothing deeper
            break
        frontier = nxt
    return sorted(scopes)


def _job_id(name: str, job_pattern: re.Pattern[str]) -> str | None:
    m = job_pattern.fullmatch(name)
    if not m:
        return None
    job = m.group("job")
    return job if JOB_ID.fullmatch(job) else None


def find_cgroups(
    root: Path,
    *,
    job_pattern: re.Pattern[str] = JOB_DIR,
    steps: bool = True,
    job: str | None = None,
    log: list[str] | None = None,
    deadline: Deadline | None = None,
) -> Iterator[JobCgroup]:
    """Every Slurm job cgroup (and its steps) under ``root``, or job ``job``'s alone (looked up
    by name in each scope, never by listing every job). No symbolic link is followed; an
    unlistable folder is a line in ``log`` and the walk goes on; it stops at ``deadline``."""
    log = [] if log is None else log
    deadline = deadline or Deadline(math.inf)
    for scope, node in _scopes(root, log, deadline):
        jobs: Iterable[Path]
        if job is None:
            jobs = _subdirs(scope, log, deadline)
        elif job_pattern is JOB_DIR:
            jd = scope / f"job_{job}"
            jobs = [jd] if jd.is_dir() and not jd.is_symlink() else []
        else:
            jobs = (
                d for d in _subdirs(scope, log, deadline) if _job_id(d.name, job_pattern) == job
            )
        for jd in jobs:
            if deadline.over():
                return
            job_id = _job_id(jd.name, job_pattern)
            if job_id is None:
                continue
            yield JobCgroup(jd, job_id, None, node)
            if not steps:
                continue
            for sd in sorted(_subdirs(jd, log)):
                sm = STEP_DIR.fullmatch(sd.name)
                if sm:
                    yield JobCgroup(sd, job_id, sm.group("step"), node)


def _read(dir_fd: int, name: str) -> str:
    """A small regular file in the folder ``dir_fd``: no link followed, no FIFO waited on."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{name}: not a regular file")
        data = os.read(fd, 65536)
    finally:
        os.close(fd)
    return data.decode("ascii")


def now_utc() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def record(**fields: Any) -> dict[str, Any]:
    """A record of the schema with every field present: ``fields`` over the defaults (nothing
    measured, collected now)."""
    rec: dict[str, Any] = {
        "schema": SCHEMA,
        "host": None,
        "cluster": None,
        "job_id": None,
        "step": None,
        "node_prefix": None,
        "cgroup": None,
        "collected_at": now_utc(),
        "status": "ok",
        "some_s": None,
        "full_s": None,
        "usage_s": None,
        "throttled_s": None,
        "nr_throttled": None,
        "cpus": None,
        "cpu_count": None,
        "errors": [],
    }
    rec.update(fields)
    return rec


def _why(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return "absent (kernel without PSI, or psi=0)"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"[:200]


def _fill(rec: dict[str, Any], dir_fd: int) -> None:
    """The cgroup's files into ``rec``; each one that cannot be read leaves its fields null and
    names itself in ``errors``."""
    try:
        rec.update(parse_pressure(_read(dir_fd, "cpu.pressure")))
    except Exception as exc:  # noqa: BLE001 - one bad file costs its own fields only
        rec["status"] = "unavailable"
        rec["errors"].append(f"cpu.pressure: {_why(exc)}")
    try:
        counters = parse_cpu_stat(_read(dir_fd, "cpu.stat"))
        if "usage_usec" in counters:
            rec["usage_s"] = counters["usage_usec"] / 1e6
        if "throttled_usec" in counters:
            rec["throttled_s"] = counters["throttled_usec"] / 1e6
        rec["nr_throttled"] = counters.get("nr_throttled")
    except Exception as exc:  # noqa: BLE001
        rec["errors"].append(f"cpu.stat: {_why(exc)}")
    for name in ("cpuset.cpus.effective", "cpuset.cpus"):
        try:
            text = _read(dir_fd, name).strip()
        except Exception:  # noqa: BLE001 - the cpuset controller is often not enabled
            continue
        if text:
            count = count_cpus(text)
            if count is None:
                rec["errors"].append(f"{name}: not a CPU list")
            else:
                rec["cpus"], rec["cpu_count"] = text, count
            break


def read_cgroup(cg: JobCgroup, *, host: str, cluster: str | None) -> dict[str, Any]:
    """One record for one cgroup; whatever cannot be read leaves its fields null and is named in
    ``errors`` (a cgroup folder that is a link, or cannot be opened, reads as unavailable)."""
    rec = record(
        host=host,
        cluster=cluster,
        job_id=cg.job_id,
        step=cg.step,
        node_prefix=cg.node,
        cgroup=str(cg.path),
    )
    try:
        dir_fd = os.open(str(cg.path), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        rec["status"] = "unavailable"
        rec["errors"].append(f"{cg.path}: {_why(exc)}")
        return rec
    try:
        _fill(rec, dir_fd)
    finally:
        os.close(dir_fd)
    return rec


def unavailable(
    reason: str, *, host: str, cluster: str | None, job_id: str | None
) -> dict[str, Any]:
    """The record a node without cgroup v2 pressure writes for a job: nothing measured, said so."""
    return record(host=host, cluster=cluster, job_id=job_id, status="unavailable", errors=[reason])


def append_records(out: Path, records: Sequence[dict[str, Any]]) -> None:
    """Append JSON lines to ``out`` as one write under an exclusive lock, so concurrent
    collectors (an epilog and the node agent) never interleave a line."""
    if not records:
        return
    data = "".join(json.dumps(r, separators=(",", ":"), sort_keys=True) + "\n" for r in records)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(out), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(data.encode())
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)


def cgroup_v2_root(root: Path) -> bool:
    return (root / "cgroup.controllers").exists()


def collect(
    root: Path,
    *,
    host: str,
    cluster: str | None,
    job: str | None = None,
    steps: bool = True,
    job_pattern: re.Pattern[str] = JOB_DIR,
    max_ms: float = DEFAULT_MAX_MS,
) -> tuple[list[dict[str, Any]], list[str]]:
    """(records, log lines) for every job cgroup under ``root`` (or job ``job`` alone), stopping
    at ``max_ms`` with a log line that says how many were read. A cgroup that cannot be read is
    one ``unavailable`` record; the others are read all the same."""
    deadline = Deadline(max_ms)
    log: list[str] = []
    if job is not None and not JOB_ID.fullmatch(job):
        log.append(f"job {job[:40]!r} is not a job id: nothing collected")
        return [], log
    if not cgroup_v2_root(root):
        reason = f"{root}: no cgroup v2 here (no cgroup.controllers): pressure unavailable"
        log.append(reason)
        recs = [unavailable(reason, host=host, cluster=cluster, job_id=job)] if job else []
        return recs, log
    records: list[dict[str, Any]] = []
    found = 0
    for cg in find_cgroups(
        root, job_pattern=job_pattern, steps=steps, job=job, log=log, deadline=deadline
    ):
        found += 1
        records.append(read_cgroup(cg, host=host, cluster=cluster))
        if deadline.over():
            break
    if deadline.over():
        log.append(f"stopped after {max_ms:g} ms: {len(records)} cgroups read, more may be left")
    if job is not None and not found:
        reason = f"job {job}: no cgroup under {root} (already removed, or not a cgroup/v2 job)"
        log.append(reason)
        records.append(unavailable(reason, host=host, cluster=cluster, job_id=job))
    return records, log


def _max_ms(text: str, log: list[str]) -> float:
    """``--max-ms`` as a bound: a finite number of milliseconds from 1 to 60,000, else the
    default with a log line (a bad setting must not leave a node uncollected)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 1 <= value <= MAX_MAX_MS):
        log.append(f"--max-ms {text[:30]!r} is not 1 to {MAX_MAX_MS:g}: {DEFAULT_MAX_MS:g} used")
        return DEFAULT_MAX_MS
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="advisor-pressure-collect",
        description="Append each Slurm job cgroup's CPU pressure to a spool file (JSON lines). "
        "Always exits 0; errors go to the log.",
    )
    p.add_argument("--cgroup-root", default="/sys/fs/cgroup", help="cgroup v2 mount point")
    p.add_argument("--out", required=True, help="spool file to append to")
    p.add_argument(
        "--job",
        default=None,
        help="only this job id (default: every job; an epilog passes $SLURM_JOB_ID)",
    )
    p.add_argument("--cluster", default=None, help="cluster name written into each record")
    p.add_argument("--host", default=None, help="host name (default: this host's short name)")
    p.add_argument("--no-steps", action="store_true", help="job cgroups only, not their steps")
    p.add_argument(
        "--job-dir-pattern",
        default=None,
        help="regex of a job's whole folder name with a group named 'job' "
        "(SLUID-keyed trees: e.g. '(?P<job>[0-9A-Za-z]+)')",
    )
    p.add_argument(
        "--max-ms",
        default=str(DEFAULT_MAX_MS),
        help="stop walking after this many milliseconds (1 to 60000)",
    )
    p.add_argument("--log", default=None, help="append log lines here instead of stderr")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the collector; returns 0 whatever happens (a job's epilog must never fail)."""
    log_to: str | None = None
    lines: list[str] = []
    try:
        args = _parser().parse_args(argv)
        log_to = args.log
        host = args.host or socket.gethostname().split(".")[0]
        job = args.job or None
        if job is None and os.environ.get("SLURM_SCRIPT_CONTEXT", "").startswith("epilog"):
            job = os.environ.get("SLURM_JOB_ID") or None
        pattern = re.compile(args.job_dir_pattern, re.ASCII) if args.job_dir_pattern else JOB_DIR
        records, walk_log = collect(
            Path(args.cgroup_root),
            host=host,
            cluster=args.cluster or os.environ.get("SLURM_CLUSTER_NAME") or None,
            job=job,
            steps=not args.no_steps,
            job_pattern=pattern,
            max_ms=_max_ms(args.max_ms, lines),
        )
        lines.extend(walk_log)
        append_records(Path(args.out), records)
    except SystemExit as exc:  # argparse: a usage error is still no failure of the job
        if exc.code not in (0, None):
            lines.append(f"usage error (exit {exc.code}); nothing collected")
    except Exception as exc:  # noqa: BLE001 - never fail the job that runs this
        lines.append(f"{type(exc).__name__}: {exc}")
    if lines:
        text = "".join(f"advisor-pressure-collect: {line}\n" for line in lines)
        try:
            if log_to:
                with open(log_to, "a", encoding="utf-8") as fh:
                    fh.write(text)
            else:
                sys.stderr.write(text)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
