"""One load's prediction over a core range, computed once and read by every answer.

:func:`predict` takes a load's features (:class:`~advisor.model.load.JobFeatures`), the fitted
model file and the most cores a node gives, and returns a :class:`Prediction`:

- the **demand** per process role with its interval over the fit's refits, and the tokenizer
  thread's utilisation (:class:`JobDemand`);
- the **evidence**: the calibration series of the load's configuration family (engine, GPUs,
  TP, executor) as the fit recorded them; with none, no wait is predicted and the answer is
  vLLM's 2 + N;
- the **wait** per role and core count with its interval (:mod:`advisor.model.waitmodel`),
  from one core below 2 + N to the node's most, and the most TTFT can slow at each count
  from it (:class:`~advisor.model.waitmodel.SlowdownBound`).

The decision (:mod:`advisor.recommend.decision`) is a function of this record and the
thresholds alone (``--max-wait`` picks the knee from :meth:`Prediction.wait_knee`); pricing is a
function of the decision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.model import slowdown
from advisor.model.demand import (
    TOKENIZER_SATURATION_SHARE,
    DemandParts,
    demand_arrays,
    demand_of,
    family,
)
from advisor.model.load import JobFeatures
from advisor.model.waitmodel import (
    SlowdownBound,
    WaitFit,
    WaitPrediction,
    slowdown_bounds,
    wait_curve,
    wait_knee,
)


@dataclass(frozen=True)
class JobDemand:
    """A job's CPU demand: its parts, its interval, and its tokenizer."""

    parts: DemandParts
    demand_cores_interval: tuple[float, float]  # 5-95% over the fit's refits
    tokenizer_saturated: bool
    renderer_workers_needed: int  # to bring each tokenizer thread under the saturation share
    rps_per_renderer_worker: float | None  # the rate one worker sustains at this prompt length

    @property
    def demand_cores(self) -> float:
        return self.parts.demand_cores


def job_demand(params: slowdown.CurveParams, f: JobFeatures) -> JobDemand:
    """The demand of the load ``f`` by the fitted demand model, with its refits' interval."""
    nd = slowdown.N_DEMAND
    values = params.values[:nd]
    parts = demand_of(
        values,
        load_rps=f.load_rps,
        prompt_tokens=f.prompt_tokens,
        gpus=f.gpus,
        tp=f.tp,
        executor=f.executor,
        renderer_workers=f.renderer_workers,
        gpu_busy=f.gpu_busy,
    )
    boots = [b[:nd] for b in params.bootstrap_values] or [values]
    demands = [
        float(
            demand_arrays(
                b,
                tokens_per_s=f.tokens_per_s,
                gpus=f.gpus,
                tp=f.tp,
                mp=f.executor == "mp",
                gpu_busy=f.gpu_busy,
            )[4]
        )
        for b in boots
    ]
    lo = min(float(np.quantile(demands, 0.05)), parts.demand_cores)
    hi = max(float(np.quantile(demands, 0.95)), parts.demand_cores)
    per_token = values[1] * f.prompt_tokens / 1e5  # tokenizer cores per request/s
    tokenize = values[1] * f.tokens_per_s / 1e5  # tokenizer cores in all
    return JobDemand(
        parts,
        (lo, hi),
        parts.tokenizer_utilisation >= TOKENIZER_SATURATION_SHARE,
        max(f.renderer_workers, math.ceil(tokenize / TOKENIZER_SATURATION_SHARE - 1e-9)),
        TOKENIZER_SATURATION_SHARE / per_token if per_token > 0 else None,
    )


@dataclass(frozen=True)
class Evidence:
    """The calibration series of the job's configuration family."""

    level: str  # "measured" or "none"
    family: str
    series: tuple[dict[str, Any], ...]


def family_of(f: JobFeatures) -> str:
    return family("vllm", f.gpus, f.tp, f.executor)


def evidence_for(params: slowdown.CurveParams, f: JobFeatures) -> Evidence:
    fam = family_of(f)
    ids = set((params.meta.get("families") or {}).get(fam) or [])
    series = tuple(s for s in params.meta.get("series") or [] if s.get("series") in ids)
    return Evidence("measured" if series else "none", fam, series)


@dataclass(frozen=True)
class Prediction:
    """What the model predicts for one load (see the module doc). ``waits`` and ``bounds`` are
    empty where the family has no calibration series or the model file no wait fit for the
    executor: then no wait decides."""

    features: JobFeatures
    demand: JobDemand
    evidence: Evidence
    top_cores: int  # the most cores predicted for: the node's, never below 2 + N
    waits: tuple[WaitPrediction, ...] = ()
    bounds: tuple[SlowdownBound, ...] = ()

    @property
    def has_wait(self) -> bool:
        return bool(self.waits)

    def wait_knee(self, max_wait: float) -> int | None:
        """The fewest cores, never below 2 + N, at which the engine core and the API server wait
        at most ``max_wait`` there and at every larger count; None where none up to the top."""
        return wait_knee(self.waits, max_wait=max_wait, floor=self.features.floor_cores)


def predict(params: slowdown.CurveParams, f: JobFeatures, cap: int) -> Prediction:
    """The prediction for the load ``f`` from one core below 2 + N up to ``cap`` cores per GPU
    (the node's most)."""
    demand = job_demand(params, f)
    evidence = evidence_for(params, f)
    top = max(int(cap) * f.gpus, f.floor_cores)
    fit = WaitFit.from_json(params.meta.get("wait"))
    if evidence.level == "none" or fit is None or fit.get("engine_core", f.executor) is None:
        return Prediction(f, demand, evidence, top)
    p = demand.parts
    waits = wait_curve(
        fit,
        executor=f.executor,
        workers=f.gpus if f.executor == "mp" else 0,
        api_cores=p.api_server_cores,
        engine_cores=p.engine_core_cores,
        core_counts=range(max(f.floor_cores - 1, 1), top + 1),
    )
    by_role = {"api_server": p.api_server_cores, "engine_core": p.engine_core_cores}
    bounds = slowdown_bounds(waits, by_role)
    return Prediction(f, demand, evidence, top, tuple(waits), tuple(bounds))
