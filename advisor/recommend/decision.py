"""The decision: how many cores a job's configuration needs, read from the model's one
prediction for its load (:func:`advisor.model.prediction.predict`).

- The **demand** (:class:`~advisor.model.prediction.JobDemand`): the fitted per-process CPU of
  the configuration, with a 90% interval over the fit's series-bootstrap refits, and the
  tokenizer thread's utilisation (``tokenizer-saturated`` from
  :data:`advisor.model.demand.TOKENIZER_SATURATION_SHARE` on: the remedy is more renderer workers,
  at the rate one worker sustains, not more cores).
- The **evidence** (:class:`~advisor.model.prediction.Evidence`): the calibration series of the
  configuration's family (engine, GPUs, TP, executor), as the fit recorded them. No series of
  the family: the answer is vLLM's 2 + N, ``evidence: none``.
- The **answer** (:func:`decide`, a function of the prediction and the thresholds): with
  evidence and a wait model for the executor in the model file (:func:`wait_answer`, the
  prediction's wait read at ``max_wait``), the fewest cores, never below 2 + N,
  whose predicted engine-core and API-server run-queue wait is at most ``max_wait``; else, with
  evidence, and where the fit's held-out decisions show
  the capacity model deciding better than 2 + N, the fewest whole cores with demand <= u x
  cores (``u`` chosen by the fit on training series), never below 2 + N; where they do not, 2 + N,
  raised only where the demand alone needs more cores (demand < cores). Never a lookup of a
  series' own knee: answers are monotone in load and prompt length and the same for every GPU
  type.

:func:`sufficient_cores` is the one function behind a job's ``--cpus-per-gpu``, a partition's
``DefCpuPerGPU`` and the policy's rules; :func:`minimum_cores` is the fewest cores whose curve
stays within a looser tolerance (a partition's ``min_cpus_per_gpu``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from advisor.model import slowdown
from advisor.model.demand import capacity_cores
from advisor.model.prediction import (  # re-exported: their home is the model's prediction
    Evidence as Evidence,
)
from advisor.model.prediction import JobDemand as JobDemand
from advisor.model.prediction import Prediction, predict
from advisor.model.prediction import evidence_for as evidence_for
from advisor.model.prediction import job_demand as job_demand
from advisor.model.waitknee import DEFAULT_MAX_WAIT
from advisor.model.waitmodel import SlowdownBound, WaitPrediction
from advisor.recommend.query import Workload, features_of

CAPACITY = "capacity model"
WAIT = "wait model"
FLOOR = "2 + N"
NO_EVIDENCE = "no evidence"
DEFAULT_UTILISATION = 0.7  # a model file without a chosen target (docs/model.md)
TOKENIZER_FLAG = "tokenizer-saturated"


def enough_sentence(max_wait: float = DEFAULT_MAX_WAIT) -> str:
    """What "enough cores" means, in the one sentence the JSON, the record's assumptions, the
    fix plan's and the report's, and the dashboard show: the wait decides, the TTFT curve is
    evidence."""
    return (
        "enough cores: the fewest at which the engine core and the API server are each "
        f"predicted to wait for a CPU at most {max_wait:.0%} of the time (--max-wait), "
        "never fewer than vLLM's 2 + N for N GPUs"
    )


@dataclass(frozen=True)
class AnswerCheck:
    """The answer against the definition: whether the predicted wait there is within
    ``max_wait`` for both roles that decide, and if not, why (None where it is)."""

    within_max_wait: bool | None  # None: no wait model for the configuration
    reason: str | None


def check_answer(decision: Decision, cores_total: int) -> AnswerCheck:
    """:class:`AnswerCheck` of the answer ``cores_total`` (after the node cap)."""
    wait = decision.wait
    if wait is None:
        return AnswerCheck(None, f"no wait model for this configuration: {decision.reason}")
    worst = max(
        (p for role in ("engine_core", "api_server") if (p := wait.at(cores_total, role))),
        key=lambda p: p.wait,
        default=None,
    )
    if worst is None or worst.wait <= wait.max_wait + 1e-12:
        return AnswerCheck(True, None)
    if not decision.reached:
        why = f"the node gives {decision.cpus_per_gpu} cores per GPU, fewer than the wait needs"
    elif wait.knee_cores is None:
        why = "no core count up to the node's cap keeps the predicted wait under the threshold"
    else:
        why = f"the answer rests on {decision.basis}, not on the wait"
    return AnswerCheck(
        False,
        f"{why}: the {worst.role.replace('_', ' ')} is predicted to wait {worst.wait:.0%} at "
        f"{cores_total} cores, above --max-wait {wait.max_wait:.0%}",
    )


def floor_cores(gpus: int) -> int:
    """vLLM's guidance: at least 2 + N physical cores for N GPUs (API server, engine core, one
    per GPU worker)."""
    return 2 + int(gpus)


@dataclass(frozen=True)
class WaitAnswer:
    """The wait model's view of a job: predicted wait per role and core count, and the fewest
    cores (never below 2 + N) whose engine core and API server wait at most ``max_wait``."""

    max_wait: float
    knee_cores: int | None  # None: no count up to the cap is under the threshold
    curve: tuple[WaitPrediction, ...]
    # the most TTFT can slow at each count from the predicted wait (waitmodel.slowdown_bounds)
    bounds: tuple[SlowdownBound, ...] = ()

    def at(self, cores: int, role: str) -> WaitPrediction | None:
        return next((p for p in self.curve if p.cores == cores and p.role == role), None)

    def bound_at(self, cores: int) -> SlowdownBound | None:
        return next((b for b in self.bounds if b.cores == cores), None)

    def to_json_list(self) -> list[dict[str, Any]]:
        counts = sorted({p.cores for p in self.curve})
        out = []
        for c in counts:
            row: dict[str, Any] = {"cores": c}
            row.update({p.role: p.to_json_dict() for p in self.curve if p.cores == c})
            b = self.bound_at(c)
            if b is not None:
                d = b.to_json_dict()
                row["slowdown_most"], row["slowdown_most_high"] = d["most"], d["most_high"]
            out.append(row)
        return out


def wait_answer(prediction: Prediction, max_wait: float = DEFAULT_MAX_WAIT) -> WaitAnswer | None:
    """The wait model's answer read from the prediction at ``max_wait``, or None where it
    predicts no wait (no series of the family, no wait fit for the executor)."""
    if not prediction.has_wait:
        return None
    knee = prediction.wait_knee(max_wait)
    return WaitAnswer(max_wait, knee, prediction.waits, prediction.bounds)


@dataclass(frozen=True)
class Decision:
    """How many cores, on what basis."""

    cores_total: int  # what the basis asks for (before the node cap)
    cpus_per_gpu: int  # whole cores per GPU, capped
    reached: bool  # False: the node cap gives fewer than asked
    capacity_cores: int  # fewest cores with demand <= u x cores, never below 2 + N
    utilisation_target: float
    basis: str  # WAIT, CAPACITY, FLOOR or NO_EVIDENCE
    reason: str
    evidence: Evidence
    wait: WaitAnswer | None = None


def capacity_settings(params: slowdown.CurveParams) -> tuple[float, str, str]:
    """(utilisation target, decision basis, why) the fit chose."""
    cap = params.meta.get("capacity") or {}
    return (
        float(cap.get("utilisation_target") or DEFAULT_UTILISATION),
        str(cap.get("decision_basis") or FLOOR),
        str(cap.get("decision_reason") or "the model file records no decision score"),
    )


def decide(
    params: slowdown.CurveParams,
    prediction: Prediction,
    cap: int,
    max_wait: float = DEFAULT_MAX_WAIT,
) -> Decision:
    """The cores the prediction asks for at ``max_wait`` (the wait model where it predicts a
    wait, else the capacity model or 2 + N as the fit chose), at most ``cap`` per GPU: a
    function of the prediction, the thresholds and the fit's capacity settings alone."""
    f, demand, evidence = prediction.features, prediction.demand, prediction.evidence
    u, basis, why = capacity_settings(params)
    floor = floor_cores(f.gpus)
    capacity = capacity_cores(demand.demand_cores, u, floor)
    # the wait model answers for a family the bench measured; elsewhere 2 + N stands
    wait = wait_answer(prediction, max_wait)
    if wait is not None:
        # the mechanism the bench resolves: how long the engine's processes queue for a CPU
        top = prediction.top_cores
        total = wait.knee_cores if wait.knee_cores is not None else top
        basis = WAIT
        at = [wait.at(total, r) for r in ("engine_core", "api_server")]
        shown = ", ".join(f"{p.role.replace('_', ' ')} {p.wait:.2f}" for p in at if p)
        reason = (
            f"the fewest cores, never below 2 + N ({floor}), at which the engine core and the "
            f"API server are predicted to wait for a CPU at most {max_wait:.0%} of the time "
            f"({shown} at {total} cores)"
            if wait.knee_cores is not None
            else f"no core count up to the node's {top} keeps the predicted wait under "
            f"{max_wait:.0%}: the most the node gives"
        )
    elif evidence.level == "none":
        total, basis = floor, NO_EVIDENCE
        reason = (
            f"no calibration series of this configuration family ({evidence.family}): vLLM's "
            f"2 + N rule, {floor} cores"
        )
    elif basis == CAPACITY:
        total = capacity
        reason = (
            f"the fewest cores with the demand ({demand.demand_cores:.2f} cores) at most "
            f"{u:.0%} of them, never below 2 + N; {why}"
        )
    else:
        # demand < cores: below that the queue of CPU work has no steady state
        total = max(floor, int(math.floor(demand.demand_cores)) + 1)
        basis = FLOOR
        reason = f"{why} ({total} cores)"
    per_gpu = math.ceil(total / f.gpus)
    return Decision(
        total, min(per_gpu, cap), per_gpu <= cap, capacity, u, basis, reason, evidence, wait
    )


@dataclass(frozen=True)
class Sufficient:
    """The cores one configuration needs (what :func:`sufficient_cores` answers)."""

    cpus_per_gpu: int
    cores_total: int
    reached: bool
    basis: str
    # the wait model's predicted wait per core count and role (WaitAnswer.to_json_list); empty
    # where the wait model did not decide
    wait_curve: tuple[dict[str, Any], ...] = ()


def sufficient_cores(
    params: slowdown.CurveParams,
    *,
    gpus: int,
    platform: str | None,
    workload: Workload,
    cap: int,
    tp: int | None = None,
    tolerance: float | None = None,
    max_wait: float = DEFAULT_MAX_WAIT,
) -> Sufficient:
    """Whole cores per GPU to ask for (:func:`decide`), at most ``cap`` per GPU: the one
    function behind a job's ``--cpus-per-gpu``, a partition's ``DefCpuPerGPU`` and the policy's
    rules. ``tolerance`` is accepted for older callers; the capacity answer does not use it."""
    f = features_of(platform, max(int(gpus), 1), workload, tp)
    cap = max(int(cap), 1)
    d = decide(params, predict(params, f, cap), cap, max_wait)
    curve = tuple(d.wait.to_json_list()) if d.wait else ()
    return Sufficient(d.cpus_per_gpu, d.cores_total, d.reached, d.basis, curve)


def minimum_cores(
    params: slowdown.CurveParams,
    *,
    gpus: int,
    platform: str | None,
    workload: Workload,
    tolerance: float,
    cap: int,
    tp: int | None = None,
) -> int:
    """The fewest whole cores per GPU whose predicted TTFT is within ``tolerance`` of ample
    cores (and not pathological), at most ``cap``."""
    f = features_of(platform, max(int(gpus), 1), workload, tp)
    knee = slowdown.knee_total_cores(params, f.template, tolerance, max_total=cap * f.gpus)
    return min(math.ceil((knee or cap * f.gpus) / f.gpus), int(cap))
