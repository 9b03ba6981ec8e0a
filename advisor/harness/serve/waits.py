"""How long the engine's processes waited for a CPU over a phase: each thread's run-queue wait
from ``/proc/<pid>/task/<tid>/schedstat`` (its second field, nanoseconds spent runnable but not
running), summed per process and per role, and the CPU pressure (PSI) of the machine and of the
engine's cgroup over the same wall time.

A sampler thread reads every thread of every engine process each ``period_s``: a thread born
during the phase counts from zero (schedstat starts at a thread's birth), one that exits counts
up to its last sample. Where schedstat or PSI cannot be read the record says so and holds no
number. Wait *share* is wait seconds per wall second, so a process of several threads can wait
more than 1.0 (two threads queued at once).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from advisor.harness.serve.procs import process_role
from advisor.harness.serve.ticker import Ticker
from advisor.pressure.collector import parse_cpu_stat, parse_pressure

PROC = Path("/proc")
MACHINE_PSI = PROC / "pressure" / "cpu"
ROLES = ("api_server", "engine_core", "gpu_worker", "other")


def read_schedstat(text: str) -> tuple[int, int]:
    """(ns on a CPU, ns runnable and waiting) from a schedstat line."""
    fields = text.split()
    return int(fields[0]), int(fields[1])


def process_threads(pid: int, proc: Path = PROC) -> dict[int, tuple[int, int]]:
    """Each live thread of ``pid``: tid -> (run ns, wait ns). Empty if the process is gone."""
    out: dict[int, tuple[int, int]] = {}
    try:
        tids = [int(t.name) for t in (proc / str(pid) / "task").iterdir()]
    except (OSError, ValueError):
        return out
    for tid in tids:
        try:
            out[tid] = read_schedstat(
                (proc / str(pid) / "task" / str(tid) / "schedstat").read_text()
            )
        except (OSError, ValueError, IndexError):
            continue
    return out


def process_name(pid: int, proc: Path = PROC) -> str:
    """The process's name as psutil gives it (untruncated where the kernel's 15-character comm
    cuts it), else its comm."""
    if proc == PROC:
        try:
            import psutil

            return str(psutil.Process(pid).name())
        except Exception:  # noqa: BLE001 - gone, or no psutil: fall back to comm
            pass
    try:
        return (proc / str(pid) / "comm").read_text().strip()
    except OSError:
        return "?"


def own_cgroup(pid: int, proc: Path = PROC, mount: Path = Path("/sys/fs/cgroup")) -> Path | None:
    """The cgroup v2 folder of ``pid`` (its ``0::`` line), where it has a ``cpu.pressure``."""
    try:
        lines = (proc / str(pid) / "cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            for base in (mount, mount / "unified"):
                path = base / line[3:].lstrip("/")
                if (path / "cpu.pressure").exists():
                    return path
    return None


def engine_cgroup(pid: int | None, proc: Path = PROC) -> Path | None:
    """The engine's cgroup when it is one of its own (not the harness's): a Slurm step's, say."""
    if pid is None:
        return None
    mine = own_cgroup(os.getpid(), proc)
    theirs = own_cgroup(pid, proc)
    return theirs if theirs is not None and theirs != mine else None


def _psi(path: Path | None) -> dict[str, float] | None:
    if path is None:
        return None
    try:
        return parse_pressure(path.read_text())
    except (OSError, ValueError):
        return None


def _cpu_stat(cgroup: Path | None) -> dict[str, int] | None:
    if cgroup is None:
        return None
    try:
        return parse_cpu_stat((cgroup / "cpu.stat").read_text())
    except (OSError, ValueError):
        return None


def cpu_stat_delta(
    before: Mapping[str, int] | None, after: Mapping[str, int] | None, wall_s: float
) -> dict[str, float] | None:
    """A cgroup's CPU seconds (and throttled seconds) between two ``cpu.stat`` readings, and the
    cores they make over the wall time."""
    if before is None or after is None or wall_s <= 0 or "usage_usec" not in after:
        return None
    used = max(0, after["usage_usec"] - before.get("usage_usec", 0)) / 1e6
    throttled = max(0, after.get("throttled_usec", 0) - before.get("throttled_usec", 0)) / 1e6
    return {"usage_s": used, "cores": used / wall_s, "throttled_s": throttled}


def psi_delta(
    before: Mapping[str, float] | None, after: Mapping[str, float] | None, wall_s: float
) -> dict[str, float | None] | None:
    """Stall seconds and shares of wall time between two PSI readings."""
    if before is None or after is None or wall_s <= 0:
        return None
    out: dict[str, float | None] = {}
    for kind in ("some", "full"):
        b, a = before.get(f"{kind}_s"), after.get(f"{kind}_s")
        d = max(0.0, a - b) if a is not None and b is not None else None
        out[f"{kind}_s"] = d
        out[f"{kind}_share"] = d / wall_s if d is not None else None
    return out


class WaitSampler:
    """Run-queue wait per engine process over a ``with`` block (see the module docstring)."""

    def __init__(
        self,
        pids: Callable[[], Sequence[int]],
        *,
        root_pid: int | None = None,
        period_s: float = 0.25,
        proc: Path = PROC,
        machine_psi: Path = MACHINE_PSI,
        cgroup: Path | None = None,
    ) -> None:
        self.pids = pids
        self.root_pid = root_pid
        self.period_s = period_s
        self.proc = proc
        self.machine_psi = machine_psi
        self.cgroup = cgroup
        self._first: dict[int, tuple[int, int]] = {}
        self._last: dict[int, tuple[int, int]] = {}
        self._owner: dict[int, int] = {}
        self._names: dict[int, str] = {}
        self._known_at_start: set[int] = set()
        self._alive: set[int] = set()
        self.samples = 0
        self.readable = False
        self._ticker = Ticker(period_s, lambda: self._sample(first=False))
        self._lock = threading.Lock()
        self._t0 = 0.0
        self.wall_s = 0.0
        self._psi0: dict[str, float] | None = None
        self._cg0: dict[str, float] | None = None
        self._stat0: dict[str, int] | None = None
        self.result: dict[str, Any] = {}

    def _sample(self, first: bool) -> None:
        alive: set[int] = set()
        for pid in self.pids():
            threads = process_threads(pid, self.proc)
            if not threads:
                continue
            self.readable = True
            if pid not in self._names:
                self._names[pid] = process_name(pid, self.proc)
            for tid, val in threads.items():
                alive.add(tid)
                self._owner[tid] = pid
                if tid not in self._first:
                    # a thread seen at the start counts from there; one born later from zero
                    self._first[tid] = val if first else (0, 0)
                    if first:
                        self._known_at_start.add(tid)
                self._last[tid] = val
        with self._lock:
            self._alive = alive
            self.samples += 1

    def __enter__(self) -> WaitSampler:
        self._psi0 = _psi(self.machine_psi)
        self._cg0 = _psi(self.cgroup / "cpu.pressure") if self.cgroup else None
        self._stat0 = _cpu_stat(self.cgroup)
        self._t0 = time.monotonic()
        self._sample(first=True)

        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ticker.stop()
        self._sample(first=False)
        self.wall_s = time.monotonic() - self._t0
        self.result = self._summary(
            _psi(self.machine_psi), _psi(self.cgroup / "cpu.pressure") if self.cgroup else None
        )

    def _summary(
        self, psi1: dict[str, float] | None, cg1: dict[str, float] | None
    ) -> dict[str, Any]:
        wall = self.wall_s
        psi = {
            "machine": psi_delta(self._psi0, psi1, wall),
            "cgroup": psi_delta(self._cg0, cg1, wall),
            "cgroup_path": str(self.cgroup) if self.cgroup else None,
            # the cgroup's own CPU time over the phase, as the node collector reads a job's
            "cgroup_cpu": cpu_stat_delta(self._stat0, _cpu_stat(self.cgroup), wall),
        }
        if not self.readable:
            return {
                "status": "unavailable",
                "reason": "no engine thread's schedstat could be read",
                "wall_s": wall,
                "samples": self.samples,
                "period_s": self.period_s,
                "by_process": [],
                "by_role": {},
                "psi": psi,
            }
        per: dict[int, dict[str, Any]] = {}
        for tid, (r1, w1) in self._last.items():
            r0, w0 = self._first[tid]
            pid = self._owner[tid]
            row = per.setdefault(
                pid,
                {
                    "pid": pid,
                    "name": self._names.get(pid, "?"),
                    "role": process_role(self._names.get(pid, "?"), pid == self.root_pid),
                    "cpu_s": 0.0,
                    "wait_s": 0.0,
                    "threads": 0,
                    "threads_born": 0,
                    "threads_gone": 0,
                },
            )
            row["cpu_s"] += max(0, r1 - r0) / 1e9
            row["wait_s"] += max(0, w1 - w0) / 1e9
            row["threads"] += 1
            row["threads_born"] += tid not in self._known_at_start
            row["threads_gone"] += tid not in self._alive
        rows = sorted(per.values(), key=lambda r: -r["wait_s"])
        for row in rows:
            row["wait_share"] = row["wait_s"] / wall if wall > 0 else None
            row["cpu_share"] = row["cpu_s"] / wall if wall > 0 else None
        return {
            "status": "ok",
            "reason": None,
            "wall_s": wall,
            "samples": self.samples,
            "period_s": self.period_s,
            "by_process": rows,
            "by_role": role_shares(rows),
            "psi": psi,
        }


def role_shares(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Wait and CPU share per role: summed over the role's processes, and for GPU workers also
    the mean per worker (``wait_share_per_process``)."""
    out: dict[str, dict[str, float]] = {}
    for role in ROLES:
        mine = [r for r in rows if r.get("role") == role and r.get("wait_share") is not None]
        if not mine:
            continue
        wait = sum(float(r["wait_share"]) for r in mine)
        cpu = sum(float(r.get("cpu_share") or 0.0) for r in mine)
        out[role] = {
            "wait_share": wait,
            "cpu_share": cpu,
            "processes": float(len(mine)),
            "wait_share_per_process": wait / len(mine),
        }
    return out


def normalised_wait(wait: Mapping[str, Any]) -> dict[str, Any]:
    """A run's wait record with each process's role taken again from its name, and the per-role
    shares summed again: what a record written before a naming rule was fixed (vLLM's engine
    core is ``VLLM::EngineCor`` in the kernel's 15-character comm) would hold today."""
    rows = wait.get("by_process") or []
    if wait.get("status") != "ok" or not rows or not all("name" in r for r in rows):
        return dict(wait)
    fixed = [
        {**r, "role": process_role(str(r["name"]), r.get("role") == "api_server")} for r in rows
    ]
    return {**wait, "by_process": fixed, "by_role": role_shares(fixed)}


def _role_of_run(run: Mapping[str, Any], role: str) -> dict[str, float] | None:
    wait = (run.get("extra") or {}).get("wait") or {}
    if wait.get("status") != "ok":
        return None
    rows = wait.get("by_process") or []
    if rows and all("name" in r for r in rows):
        # roles again from the names, so a record written before a naming rule was fixed reads
        # as a new one would
        rows = [
            {**r, "role": process_role(str(r["name"]), r.get("role") == "api_server")} for r in rows
        ]
        return role_shares(rows).get(role)
    return (wait.get("by_role") or {}).get(role)


def wait_of_run(run: Mapping[str, Any], role: str) -> float | None:
    """A run's wait share for ``role`` (GPU workers: per worker), or None where the run has no
    wait record (older runs) or its sampler could not read schedstat."""
    by = _role_of_run(run, role)
    if not by:
        return None
    key = "wait_share_per_process" if role == "gpu_worker" else "wait_share"
    return float(by[key])


def busy_of_run(run: Mapping[str, Any], role: str) -> float | None:
    """Cores a role ran on over the phase from its threads' schedstat (GPU workers: per
    worker), or None without a wait record."""
    by = _role_of_run(run, role)
    if not by or "cpu_share" not in by:
        return None
    n = by.get("processes") or 1.0
    return float(by["cpu_share"]) / (n if role == "gpu_worker" else 1.0)


def psi_of_run(run: Mapping[str, Any], scope: str = "machine", kind: str = "some") -> float | None:
    """A run's CPU PSI share (``some`` or ``full``) of the machine or the engine's cgroup."""
    wait = (run.get("extra") or {}).get("wait") or {}
    block = (wait.get("psi") or {}).get(scope) or {}
    value = block.get(f"{kind}_share")
    return float(value) if value is not None else None
