"""Loads chosen by the CPU they demand: a short ladder of attacker rates at the most cores,
each step's per-process CPU measured, and three demand levels picked from it.

- ``light``: the highest rate whose engine processes together need at most one core less than
  the fewest cores under test (it fits at every count: the curve should be flat), else the
  ladder's lowest rate;
- ``heavy``: the highest rate below saturation: the API server's tokenizer thread under its
  limit (``tokenizer-saturated``), the victims' median under ``saturation_factor`` times its
  no-load value, the GPU under 90 % busy, failures under the limit;
- ``medium``: the rate whose demand lies halfway between light's and heavy's (interpolated on
  the ladder).

The ladder is kept as ``levels-<workload>.json`` in the output folder and reused by later
starts, reruns and other executors' runs with the same tag, so they all run the same traffic.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from advisor.harness.config import BenchConfig, kept_ladder
from advisor.harness.load.loadgen import Target, plan_phase, run_phase
from advisor.harness.load.prompts import PromptFactory
from advisor.harness.metrics import summarise
from advisor.harness.phase import StartState
from advisor.harness.records import LoadSpec
from advisor.harness.serve import engine as eng
from advisor.harness.serve.pinning import CoreSplit
from advisor.harness.serve.procs import cpu_by_pid, per_process_cpu, role_cores

LEVELS = ("light", "medium", "heavy")
LEVELS_SCHEMA = "advisor.bench.levels/1"


def ladder_step(
    load: LoadSpec,
    rate: float,
    step_s: float,
    seed: int,
    target: Target,
    factory: PromptFactory,
    split: CoreSplit,
    pids: Callable[[], Sequence[int]],
    root_pid: int | None,
) -> dict[str, Any]:
    """One ladder step: the load at ``rate`` for ``step_s`` seconds, its victims' median, the
    GPU's use and each engine role's cores."""
    from advisor.harness.serve.platform import GpuSampler

    spec = replace(load, attacker_rps=rate, duration_s=step_s, seed=seed, salt=f"{seed:08x}")
    planned = plan_phase(spec, target, factory)
    own = os.sched_getaffinity(0)
    before = cpu_by_pid(pids())
    os.sched_setaffinity(0, set(split.client))
    t0 = time.monotonic()
    try:
        with GpuSampler() as gpu:
            phase = run_phase(planned, target, min(load.timeout_s, 30.0))
    finally:
        os.sched_setaffinity(0, own)
    wall = time.monotonic() - t0
    procs = per_process_cpu(before, cpu_by_pid(pids()), wall, root_pid)
    vic = summarise(phase.records, "victim")
    return {
        "attacker_rps": rate,
        "victim_ttft_p50_ms": vic.ttft_p50_ms,
        "gpu_util_percent": gpu.mean_percent,
        "requests": len(phase.records),
        "failed": sum(r.status != "ok" for r in phase.records),
        "wall_s": wall,
        "cores_total": sum((p["cpu_percent"] or 0.0) for p in procs) / 100.0,
        "cores_by_role": {
            role: role_cores(procs, role) for role in ("api_server", "engine_core", "gpu_worker")
        },
    }


def saturation(
    step: dict[str, Any],
    noload_p50_ms: float | None,
    saturation_factor: float,
    tokenizer_limit_cores: float,
    max_failed_share: float,
) -> list[str]:
    """Why a ladder step is saturated (empty: it is not)."""
    reasons = []
    p50 = step.get("victim_ttft_p50_ms")
    if p50 is None or (noload_p50_ms and p50 > saturation_factor * noload_p50_ms):
        reasons.append("victim TTFT")
    api = (step.get("cores_by_role") or {}).get("api_server")
    if api is not None and api >= tokenizer_limit_cores:
        reasons.append("tokenizer-saturated")
    gpu = step.get("gpu_util_percent")
    if gpu is not None and gpu >= 90.0:
        reasons.append("GPU")
    sent = step.get("requests") or 0
    if sent and (step.get("failed") or 0) / sent > max_failed_share:
        reasons.append("failed requests")
    return reasons


def choose_levels(steps: Sequence[dict[str, Any]], fewest_cores: int) -> dict[str, dict[str, Any]]:
    """light / medium / heavy from the ladder's steps (see the module docstring). Each level has
    its rate, the demand (cores) it was chosen for and why."""
    ok = [s for s in steps if not s.get("saturated_by")]
    if not ok:
        ok = list(steps[:1])
    heavy = ok[-1]
    fits = [s for s in ok if s["cores_total"] <= fewest_cores - 1]
    light = fits[-1] if fits else ok[0]
    if light["attacker_rps"] >= heavy["attacker_rps"] and len(ok) > 1:
        light = ok[0]
    lo, hi = light["cores_total"], heavy["cores_total"]
    mid_demand = (lo + hi) / 2.0
    medium_rps = _interpolate(ok, mid_demand)
    return {
        "light": {
            "attacker_rps": light["attacker_rps"],
            "demand_cores": lo,
            "why": (
                f"highest rate whose engine needs <= {fewest_cores - 1} core(s) "
                f"(fewest cores under test {fewest_cores} minus one)"
                if fits
                else "no rate needs so little; the ladder's lowest rate"
            ),
        },
        "medium": {
            "attacker_rps": medium_rps,
            "demand_cores": mid_demand,
            "why": "halfway between light's and heavy's demand, interpolated on the ladder",
        },
        "heavy": {
            "attacker_rps": heavy["attacker_rps"],
            "demand_cores": hi,
            "why": "highest rate below saturation at the most cores",
        },
    }


def _interpolate(steps: Sequence[dict[str, Any]], demand: float) -> float:
    """The attacker rate at which the measured demand reaches ``demand`` (linear between steps,
    rounded to 0.1 request/s)."""
    pts = sorted((s["cores_total"], s["attacker_rps"]) for s in steps)
    if demand <= pts[0][0]:
        return round(pts[0][1], 1)
    for (d0, r0), (d1, r1) in zip(pts, pts[1:], strict=False):
        if d0 <= demand <= d1:
            share = (demand - d0) / (d1 - d0) if d1 > d0 else 0.0
            return round(r0 + share * (r1 - r0), 1)
    return round(pts[-1][1], 1)


def leveled_loads(
    cfg: BenchConfig,
    loads: tuple[LoadSpec, ...],
    target: Target,
    factory: PromptFactory,
    split: CoreSplit,
    st: StartState,
    engine: eng.EngineProcess,
    start: int,
) -> tuple[LoadSpec, ...]:
    """The loads of ``level_workloads`` at the demand levels (advisor.harness.levels), one
    ladder per workload at the most cores; kept as ``levels-<workload>.json`` and reused."""
    out: list[LoadSpec] = [ld for ld in loads if ld.workload not in cfg.level_workloads]
    chosen = {ld.workload: ld for ld in loads if ld.workload in cfg.level_workloads}

    def measure(load: LoadSpec) -> dict[str, Any]:
        steps = []
        noload = st.noload.get("victim_ttft_p50_ms")
        for i, rate in enumerate(cfg.rate_ladder):
            step = ladder_step(
                load,
                rate,
                cfg.ladder_step_s,
                load.seed + 500 + i,
                target,
                factory,
                split,
                engine.pids,
                engine.pid,
            )
            step["saturated_by"] = saturation(
                step,
                noload,
                cfg.saturation_factor,
                cfg.checks.tokenizer_limit_cores,
                cfg.checks.max_failed_share,
            )
            steps.append(step)
            if step["saturated_by"]:
                break
        return {
            "schema": LEVELS_SCHEMA,
            "workload": load.workload,
            "cores": len(split.engine),
            "fewest_cores": min(cfg.cores),
            "engine_start": start + 1,
            "series": cfg.identity(dict(st.env)),
            "noload_victim_ttft_p50_ms": noload,
            "steps": steps,
            "levels": choose_levels(steps, min(cfg.cores)),
        }

    for load in chosen.values():
        found = kept_ladder(cfg, "levels", load, measure)
        seen: set[float] = set()
        for name in cfg.levels:
            rate = float(found["levels"][name]["attacker_rps"])
            if rate <= 0 or rate in seen:
                continue  # two levels at one rate would be one curve measured twice
            seen.add(rate)
            out.append(replace(load, attacker_rps=rate, level=name))
    return tuple(out)
