"""The engine's processes and their CPU use: each process's role (API server, engine core, GPU
worker) from its name, CPU seconds per process, and cores busy per role over a phase.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from advisor.harness.metrics import cpu_percent


def cpu_by_pid(pids: Sequence[int]) -> dict[int, tuple[str, float]]:
    """(process name, CPU seconds so far) of each live engine process."""
    out: dict[int, tuple[str, float]] = {}
    try:
        import psutil
    except ImportError:
        return out
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            t = proc.cpu_times()
            out[pid] = (proc.name(), t.user + t.system)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return out


def process_role(name: str, is_root: bool) -> str:
    """What an engine process does, from its name: ``api_server`` (the first process, which
    tokenizes), ``engine_core`` (vLLM's scheduler loop; with one GPU it also drives the GPU),
    ``gpu_worker`` (one per tensor-parallel rank), else ``other``."""
    if "EngineCor" in name:  # the kernel's comm keeps 15 characters: VLLM::EngineCor
        return "engine_core"
    if "Worker" in name:
        return "gpu_worker"
    return "api_server" if is_root else "other"


def per_process_cpu(
    before: dict[int, tuple[str, float]],
    after: dict[int, tuple[str, float]],
    wall_s: float,
    root_pid: int | None = None,
) -> list[dict[str, Any]]:
    """Each engine process's CPU use over the phase (CPU seconds, and percent of one core),
    busiest first."""
    rows = []
    for pid, (name, cpu1) in after.items():
        cpu0 = before.get(pid, (name, 0.0))[1]
        rows.append(
            {
                "pid": pid,
                "name": name,
                "role": process_role(name, pid == root_pid),
                "cpu_s": max(0.0, cpu1 - cpu0),
                "cpu_percent": cpu_percent(cpu0, cpu1, wall_s),
            }
        )
    return sorted(rows, key=lambda r: -(r["cpu_percent"] or 0.0))


def role_cores(procs: Sequence[dict[str, Any]], role: str) -> float | None:
    """Cores busy in processes of ``role`` (CPU seconds over wall seconds); for GPU workers the
    mean per worker. None when no process has that role."""
    mine = [p for p in procs if p.get("role") == role]
    if not mine:
        return None
    total = sum((p.get("cpu_percent") or 0.0) for p in mine) / 100.0
    return total / len(mine) if role == "gpu_worker" else total
