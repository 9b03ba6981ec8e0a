"""The node-side collector of CPU pressure: each Slurm job's (and step's) cgroup v2 ``cpu.pressure``,
``cpu.stat`` and ``cpuset.cpus.effective``, appended as one JSON line per cgroup to a spool file.

Standard library only, so that a node can run this file as it is (``python3 collector.py ...``)
without the package; ``advisor pressure collect`` runs the same code. It never fails a job: every
error becomes one log line on stderr (or ``--log``), the exit code is always 0, and the whole
walk is bounded (``--max-ms``). The harness reads process waits with the PSI parser here too, so
a bench phase and a production job speak of pressure in the same words.

A record (schema ``advisor.pressure/1``) holds what was read and when; the share of time a job
stalled is computed at ingest, against the job's own start from the accounting data.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import json
import os
import re
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "advisor.pressure/1"
# Slurm's cgroup/v2 plugin: <root>/system.slice/[<node>_]slurmstepd.scope/job_<id>/step_<name>
JOB_DIR = re.compile(r"^job_(?P<job>\d+)$")
STEP_DIR = re.compile(r"^step_(?P<step>[A-Za-z0-9_.]+)$")
SCOPE_DIR = re.compile(r"^(?:(?P<node>.+)_)?slurmstepd\.scope$")


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
                out[f"{parts[0]}_s"] = int(value) / 1e6
    if "some_s" not in out:
        raise ValueError("no 'some ... total=' line")
    return out


def parse_cpu_stat(text: str) -> dict[str, int]:
    """``cpu.stat``'s counters (``usage_usec``, ``nr_throttled``, ``throttled_usec``, ...)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[key] = int(value)
    return out


def count_cpus(cpu_list: str) -> int | None:
    """How many CPUs a list such as ``0-3,8,10-11`` names."""
    total = 0
    for part in filter(None, cpu_list.strip().split(",")):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        total += (int(hi) - int(lo) + 1) if hi else 1
    return total or None


@dataclass(frozen=True)
class JobCgroup:
    """One job's (or step's) cgroup found under the root."""

    path: Path
    job_id: str
    step: str | None  # None: the job's own cgroup; else Slurm's step name (batch, extern, 0, ...)
    node: str | None  # the node prefix of --enable-multiple-slurmd's scope, if any


def find_cgroups(
    root: Path, *, job_pattern: re.Pattern[str] = JOB_DIR, steps: bool = True
) -> Iterator[JobCgroup]:
    """Every Slurm job cgroup (and its steps) under ``root``: the scopes named
    ``[<node>_]slurmstepd.scope`` at the first of the top three levels that has any (a node's
    other services are not walked below it), then their job folders."""
    scopes: list[tuple[Path, str | None]] = []
    frontier = [root]
    for _ in range(3):
        nxt = []
        for d in frontier:
            try:
                children = [c for c in d.iterdir() if c.is_dir()]
            except OSError:
                continue
            for c in children:
                m = SCOPE_DIR.match(c.name)
                if m:
                    scopes.append((c, m.group("node")))
                else:
                    nxt.append(c)
        if scopes:  # Slurm's scopes sit side by side: nothing deeper needs reading
            break
        frontier = nxt
    for scope, node in sorted(scopes):
        try:
            jobs = sorted(c for c in scope.iterdir() if c.is_dir())
        except OSError:
            continue
        for jd in jobs:
            m = job_pattern.match(jd.name)
            if not m:
                continue
            job = m.group("job")
            yield JobCgroup(jd, job, None, node)
            if not steps:
                continue
            for sd in sorted(c for c in jd.iterdir() if c.is_dir()):
                sm = STEP_DIR.match(sd.name)
                if sm:
                    yield JobCgroup(sd, job, sm.group("step"), node)


def _read(path: Path) -> str:
    with open(path, encoding="ascii") as fh:
        return fh.read(65536)


def now_utc() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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


def read_cgroup(cg: JobCgroup, *, host: str, cluster: str | None) -> dict[str, Any]:
    """One record for one cgroup; a file that cannot be read leaves its fields null and names
    itself in ``errors``."""
    rec = record(
        host=host,
        cluster=cluster,
        job_id=cg.job_id,
        step=cg.step,
        node_prefix=cg.node,
        cgroup=str(cg.path),
    )
    try:
        rec.update(parse_pressure(_read(cg.path / "cpu.pressure")))
    except FileNotFoundError:
        rec["status"] = "unavailable"
        rec["errors"].append("cpu.pressure: absent (kernel without PSI, or psi=0)")
    except (OSError, ValueError) as exc:
        rec["status"] = "unavailable"
        rec["errors"].append(f"cpu.pressure: {exc}")
    try:
        stat = parse_cpu_stat(_read(cg.path / "cpu.stat"))
        if "usage_usec" in stat:
            rec["usage_s"] = stat["usage_usec"] / 1e6
        if "throttled_usec" in stat:
            rec["throttled_s"] = stat["throttled_usec"] / 1e6
        rec["nr_throttled"] = stat.get("nr_throttled")
    except (OSError, ValueError) as exc:
        rec["errors"].append(f"cpu.stat: {exc}")
    for name in ("cpuset.cpus.effective", "cpuset.cpus"):
        try:
            text = _read(cg.path / name).strip()
        except OSError:
            continue
        if text:
            rec["cpus"], rec["cpu_count"] = text, count_cpus(text)
            break
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
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
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
    max_ms: float = 50.0,
) -> tuple[list[dict[str, Any]], list[str]]:
    """(records, log lines) for every job cgroup under ``root`` (or job ``job`` alone), stopping
    at ``max_ms`` with a log line that says how many were left."""
    t0 = time.monotonic()
    log: list[str] = []
    if not cgroup_v2_root(root):
        reason = f"{root}: no cgroup v2 here (no cgroup.controllers): pressure unavailable"
        log.append(reason)
        recs = [unavailable(reason, host=host, cluster=cluster, job_id=job)] if job else []
        return recs, log
    records: list[dict[str, Any]] = []
    found = 0
    for cg in find_cgroups(root, job_pattern=job_pattern, steps=steps):
        if job is not None and cg.job_id != job:
            continue
        found += 1
        if (time.monotonic() - t0) * 1000 > max_ms:
            log.append(f"stopped after {max_ms:g} ms: {len(records)} cgroups read, more left")
            break
        records.append(read_cgroup(cg, host=host, cluster=cluster))
    if job is not None and not found:
        reason = f"job {job}: no cgroup under {root} (already removed, or not a cgroup/v2 job)"
        log.append(reason)
        records.append(unavailable(reason, host=host, cluster=cluster, job_id=job))
    return records, log


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
        default=JOB_DIR.pattern,
        help="regex of a job's folder name with a group named 'job' "
        "(SLUID-keyed trees: e.g. '^(?P<job>[0-9A-Za-z]+)$')",
    )
    p.add_argument("--max-ms", type=float, default=50.0, help="stop walking after this long")
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
        records, lines = collect(
            Path(args.cgroup_root),
            host=host,
            cluster=args.cluster or os.environ.get("SLURM_CLUSTER_NAME") or None,
            job=job,
            steps=not args.no_steps,
            job_pattern=re.compile(args.job_dir_pattern),
            max_ms=args.max_ms,
        )
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
