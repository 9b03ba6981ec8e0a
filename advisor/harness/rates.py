"""The rate ladder (``--find-rate``): attacker rates stepped up at the most cores until the
engine saturates; the phases then run at stated fractions of the highest unsaturated rate, the
same in every start (the ladder is kept as ``rate-<workload>.json``).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from advisor.harness.config import BenchConfig, kept_ladder
from advisor.harness.load.loadgen import Target, plan_phase, run_phase
from advisor.harness.load.prompts import PromptFactory
from advisor.harness.metrics import summarise
from advisor.harness.phase import StartState
from advisor.harness.records import LoadSpec
from advisor.harness.serve.pinning import CoreSplit


def find_rate(
    cfg: BenchConfig,
    load: LoadSpec,
    target: Target,
    factory: PromptFactory,
    split: CoreSplit,
    noload_p50_ms: float | None,
) -> dict[str, Any]:
    """Step the attacker rate up the ladder at the most cores until the engine saturates: the
    victims' median TTFT passes ``saturation_factor`` times its no-load value, the GPU is near
    full (90 %), or more than 1 % of requests fail. The highest rate below that is the knee of
    the load axis; the phases then run at stated fractions of it."""
    from advisor.harness.serve.platform import GpuSampler

    steps: list[dict[str, Any]] = []
    best: float | None = None
    own = os.sched_getaffinity(0)
    for i, rate in enumerate(cfg.rate_ladder):
        spec = replace(load, attacker_rps=rate, duration_s=cfg.ladder_step_s, seed=load.seed + i)
        planned = plan_phase(spec, target, factory)
        os.sched_setaffinity(0, set(split.client))
        try:
            with GpuSampler() as gpu:
                phase = run_phase(planned, target, min(load.timeout_s, 30.0))
        finally:
            os.sched_setaffinity(0, own)
        vic = summarise(phase.records, "victim")
        sent = len(phase.records)
        bad = sum(r.status != "ok" for r in phase.records)
        reasons = []
        if vic.ttft_p50_ms is None or (
            noload_p50_ms and vic.ttft_p50_ms > cfg.saturation_factor * noload_p50_ms
        ):
            reasons.append("victim TTFT")
        if gpu.mean_percent is not None and gpu.mean_percent >= 90.0:
            reasons.append("GPU")
        if sent and bad / sent > cfg.checks.max_failed_share:
            reasons.append("failed requests")
        steps.append(
            {
                "attacker_rps": rate,
                "victim_ttft_p50_ms": vic.ttft_p50_ms,
                "gpu_util_percent": gpu.mean_percent,
                "requests": sent,
                "failed": bad,
                "saturated_by": reasons,
            }
        )
        if reasons:
            break
        best = rate
    base = best if best is not None else cfg.rate_ladder[0]
    return {
        "schema": "advisor.bench.rate/1",
        "workload": load.workload,
        "cores": len(split.engine),
        "noload_victim_ttft_p50_ms": noload_p50_ms,
        "saturation_factor": cfg.saturation_factor,
        "steps": steps,
        "saturation_rps": best,
        "fractions": list(cfg.rate_fractions),
        "rates": [round(f * base, 2) for f in cfg.rate_fractions],
        "saturated_below_ladder": best is None,
        "ladder_top_unsaturated": bool(steps) and not steps[-1]["saturated_by"],
    }


def scaled_loads(
    cfg: BenchConfig,
    loads: tuple[LoadSpec, ...],
    target: Target,
    factory: PromptFactory,
    split: CoreSplit,
    st: StartState,
    start: int,
) -> tuple[LoadSpec, ...]:
    """The loads at ``rate_fractions`` of the rate found at the most cores, one ladder per
    workload; the ladder is kept as ``rate-<workload>.json`` and reused by later starts and
    reruns, so every start runs the same rates."""
    out: list[LoadSpec] = [ld for ld in loads if ld.workload not in cfg.rate_workloads]
    scaled = {ld.workload: ld for ld in loads if ld.workload in cfg.rate_workloads}

    def measure(load: LoadSpec) -> dict[str, Any]:
        found = find_rate(cfg, load, target, factory, split, st.noload.get("victim_ttft_p50_ms"))
        return {**found, "engine_start": start + 1}

    for load in scaled.values():
        found = kept_ladder(cfg, "rate", load, measure)
        out.extend(replace(load, attacker_rps=r) for r in found["rates"] if r > 0)
    return tuple(out)
