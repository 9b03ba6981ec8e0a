"""Core sets: which cores an engine and the load generator get, and checking that every process
and thread of the engine stays on the engine's cores.

Cores are chosen from those this process may use (``sched_getaffinity``: under Slurm, the
allocation), the GPUs' NUMA node first when the topology is known. The engine is pinned by
setting the affinity of its first process before it runs anything; its children and threads
inherit it. Since a library may widen a thread's affinity again, :func:`check_pinning` reads
``Cpus_allowed_list`` of every process and every thread (``/proc/<pid>/task/<tid>/status``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import InputError, UsageError


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """``"0-3,8,10-11"`` -> (0, 1, 2, 3, 8, 10, 11); the kernel's list format."""
    out: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                lo, hi = part.split("-", 1)
                out.update(range(int(lo), int(hi) + 1))
            else:
                out.add(int(part))
        except ValueError as exc:
            raise InputError(f"bad CPU list {text!r}", field="cpu list") from exc
    return tuple(sorted(out))


def format_cpu_list(cpus: Iterable[int]) -> str:
    """(0, 1, 2, 3, 8) -> ``"0-3,8"``."""
    s = sorted(set(cpus))
    parts, i = [], 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        parts.append(str(s[i]) if i == j else f"{s[i]}-{s[j]}")
        i = j + 1
    return ",".join(parts)


def available_cpus() -> tuple[int, ...]:
    """The CPUs this process may run on (under Slurm: its allocation)."""
    return tuple(sorted(os.sched_getaffinity(0)))


def gpu_numa_cpus(pci_bus_ids: Sequence[str], sys_root: str = "/sys") -> tuple[int, ...]:
    """CPUs of the NUMA nodes the given GPUs hang off (empty when the topology is unknown)."""
    cpus: set[int] = set()
    for bus in pci_bus_ids:
        bus = bus.lower()
        if len(bus.split(":")[0]) == 8:  # NVML's 00000000:19:00.0 -> 0000:19:00.0
            bus = bus[4:]
        node_file = Path(sys_root, "bus/pci/devices", bus, "numa_node")
        try:
            node = int(node_file.read_text().strip())
        except (OSError, ValueError):
            continue
        if node < 0:
            continue
        try:
            cpus.update(
                parse_cpu_list(
                    Path(sys_root, f"devices/system/node/node{node}/cpulist").read_text()
                )
            )
        except (OSError, InputError):
            continue
    return tuple(sorted(cpus))


@dataclass(frozen=True)
class CoreSplit:
    engine: tuple[int, ...]
    client: tuple[int, ...]
    client_shares_engine_cores: bool


def choose_cores(
    n: int,
    client_n: int,
    available: Sequence[int],
    preferred: Sequence[int] = (),
) -> CoreSplit:
    """``n`` engine cores (from ``preferred`` first, lowest numbers first) and up to
    ``client_n`` other cores for the load generator (the last ones, away from the GPUs).

    If fewer than ``n + client_n`` cores are available the client gets what is left, and when
    nothing is left it shares the engine's last cores (flagged in the result).
    """
    avail = sorted(set(available))
    if n < 1:
        raise UsageError(f"--cores {n}: need at least one core")
    if n > len(avail):
        raise UsageError(
            f"--cores {n}: only {len(avail)} CPUs available here ({format_cpu_list(avail)})"
        )
    pref = [c for c in sorted(set(preferred)) if c in avail]
    rest = [c for c in avail if c not in pref]
    # Leave the client's cores out of the engine's choice where there is room for both.
    reserve = min(client_n, len(avail) - n)
    client_pool = (pref + rest)[len(avail) - reserve :] if reserve else []
    order = [c for c in pref + rest if c not in client_pool]
    engine = tuple(sorted(order[:n]))
    client = tuple(sorted(client_pool))
    shares = False
    if not client:
        client = tuple(engine[-max(1, min(client_n, len(engine))) :])
        shares = True
    return CoreSplit(engine, client, shares)


@dataclass(frozen=True)
class ThreadAffinity:
    pid: int
    tid: int
    name: str
    cpus: tuple[int, ...]


@dataclass(frozen=True)
class PinningReport:
    """Every process and thread seen, and those allowed on any core outside the set."""

    cores: tuple[int, ...]
    processes: int
    threads: int
    violations: tuple[ThreadAffinity, ...]

    @property
    def ok(self) -> bool:
        return self.processes > 0 and not self.violations


def thread_affinities(pid: int, proc_root: str = "/proc") -> list[ThreadAffinity]:
    """The allowed CPUs of every thread of ``pid`` (an empty list if it has gone)."""
    out = []
    task_dir = Path(proc_root, str(pid), "task")
    try:
        tids = sorted(int(t) for t in os.listdir(task_dir))
    except OSError:
        return []
    for tid in tids:
        try:
            status = Path(task_dir, str(tid), "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        out.append(
            ThreadAffinity(
                pid=pid,
                tid=tid,
                name=fields.get("Name", "").strip(),
                cpus=parse_cpu_list(fields.get("Cpus_allowed_list", "")),
            )
        )
    return out


def check_pinning(pids: Iterable[int], cores: Iterable[int]) -> PinningReport:
    """Read the affinity of every thread of every pid; report those not within ``cores``."""
    allowed = set(cores)
    procs = threads = 0
    bad: list[ThreadAffinity] = []
    for pid in pids:
        ts = thread_affinities(pid)
        if not ts:
            continue
        procs += 1
        threads += len(ts)
        bad.extend(t for t in ts if not set(t.cpus) <= allowed)
    return PinningReport(tuple(sorted(allowed)), procs, threads, tuple(bad))


def repin(pids: Iterable[int], cores: Iterable[int], proc_root: str = "/proc") -> int:
    """Set the affinity of every thread of every pid to ``cores`` (``taskset -a -p`` on a live
    process tree); returns how many threads were moved. Threads started later inherit it.

    This lets one engine start serve several core counts: a start costs a minute or more of GPU
    time, a re-pin a millisecond. A thread that exits meanwhile is skipped.
    """
    allowed = set(cores)
    moved = 0
    for pid in pids:
        try:
            tids = [int(t) for t in os.listdir(Path(proc_root, str(pid), "task"))]
        except OSError:
            continue
        for tid in tids:
            try:
                os.sched_setaffinity(tid, allowed)
                moved += 1
            except (ProcessLookupError, PermissionError):
                continue
    return moved
