"""The recommendation for one job (the job-submit path): ``--cpus-per-gpu`` with its reasons.

:func:`recommend_job` reads as the steps an admin would explain:

1. what the job is (:func:`~advisor.recommend.query.job_features`, built once);
2. what the node type can give (:func:`~advisor.recommend.context.core_cap`);
3. what the model predicts for its load over the node's core range, once
   (:func:`~advisor.model.prediction.predict`: the demand, the wait per role and core count,
   the slowdown bound from it);
4. how many cores that takes, on what basis (:func:`~advisor.recommend.decision.decide`, a
   function of the prediction and ``--max-wait``);
5. what TTFT that gives, now and recommended (:func:`~advisor.recommend.curve.job_curve`);
6. what the extra cores cost (:func:`advisor.pricing.cost_delta`), where the GPU type has a
   price (the cores do not depend on it: without one the cost fields are None and
   ``cost_reason`` says why);
7. what to watch for (:func:`_warnings`) and what was assumed (:func:`_assumptions`).

It needs no database, and imports numpy but not scikit-learn or DuckDB unless a database file
exists: the model's parameters come from JSON (:mod:`advisor.model.slowdown`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

from advisor.headline import basis_sentence, calibration_of
from advisor.model import slowdown
from advisor.model.prediction import JobDemand, predict
from advisor.model.waitmodel import finite
from advisor.pricing import PriceBook, cost_delta
from advisor.recommend.context import RecommendContext, check_partition, core_cap
from advisor.recommend.curve import JobCurve, job_curve
from advisor.recommend.decision import (
    TOKENIZER_FLAG,
    WAIT,
    Decision,
    check_answer,
    decide,
    enough_sentence,
)
from advisor.recommend.query import DEFAULT_TOLERANCE, JobFeatures, JobQuery, job_features
from advisor.wording import cores_per_gpu_words, cores_text


@dataclass(frozen=True)
class JobRecommendation:
    """A ``--cpus-per-gpu`` recommendation with its basis, predicted gain and cost.

    Slowdowns are TTFT over TTFT with ample cores; the speedup is TTFT now over TTFT with the
    recommendation. Where the current cores are pathological there is no number:
    ``slowdown_now`` and ``predicted_speedup`` are None, and ``predicted_speedup_reason`` says
    why. Interval upper ends are None (JSON null) when unbounded. Without an instance price
    for the GPU type, the fields measured against it (``gpu_share_usd_per_hour``,
    ``cost_delta_pct`` and its band, ``instance``) are None and ``cost_reason`` says why.
    """

    gpu_type: str
    gpus: int
    tp: int
    executor: str  # "mp" or "uni"
    cpus_per_gpu: int
    cores_total: int
    decision_basis: str  # "capacity model", "2 + N" or "no evidence"
    decision_reason: str
    knee_source: str  # the same as decision_basis (the older name)
    capacity_cores: int  # fewest cores with demand <= u x cores, never below 2 + N
    utilisation_target: float
    knee_cores: int | None  # fewest total cores the curve puts within the tolerance
    knee_cores_interval: tuple[int | None, int | None]  # over the bootstrap refits
    floor_cores: int  # vLLM's 2 + N
    regime: str  # at the current allocation: pathological, cpu-bound or gpu-bound
    load_regime: str  # gpu-bound when 2 + N suffices, else cpu-bound
    demand_cores: float
    demand_cores_interval: tuple[float, float]
    demand_parts: dict[str, float]
    tokenizer_utilisation: float  # per renderer worker
    tokenizer_saturated: bool
    renderer_workers: int
    renderer_workers_recommended: int
    rps_per_renderer_worker: float | None
    flags: tuple[str, ...]
    pathological_below_cores: int | None  # None: no core count helps (tokenizer saturated)
    pathological_note: str | None
    slurm_option: str
    current_cpus_per_gpu: float
    current_cores_total: float
    max_cpus_per_gpu: int
    max_cpus_per_gpu_source: str
    # the band the TTFT curve is judged by as evidence (knee_cores, regime), never a criterion
    # of the answer: enough cores is the wait (definition); was the JSON's "tolerance", which
    # sat beside a slowdown_at_answer above it as if the answer broke it
    ttft_curve_band: float
    slowdown_now: float | None
    slowdown_now_interval: tuple[float | None, float]
    slowdown_recommended: float | None
    slowdown_recommended_interval: tuple[float | None, float]
    pathological_now: bool
    ttft_ms_now: float | None
    ttft_ms_recommended: float | None
    predicted_speedup: float | None
    predicted_speedup_reason: str | None
    speedup_interval: tuple[float, float] | None
    speedup_is_lower_bound: bool
    extra_vcpus: float
    usd_per_vcpu_hour: float
    usd_per_hour_delta: float
    gpu_share_usd_per_hour: float | None
    cost_delta_pct: float | None
    cost_delta_pct_band: tuple[float, float] | None  # over every per-vCPU price of the book
    instance: str | None
    cost_reason: str | None  # why the cost is unknown (no instance price); None when known
    evidence: str  # "measured" or "none"
    evidence_family: str
    evidence_series: tuple[dict[str, Any], ...]
    decision_score: dict[str, Any]
    validation: dict[str, Any]
    warnings: tuple[str, ...]
    assumptions: dict[str, Any] = field(default_factory=dict)
    basis_sentence: str = ""  # the basis as an admin repeats it (advisor.headline)
    calibrated: bool = True  # the curve was fitted on this GPU type's own measurements
    extrapolated_from: tuple[str, ...] = ()  # else: the calibrated platforms it comes from
    max_wait: float = 0.15  # the wait model's threshold (share of wall time)
    wait_knee: int | None = None  # fewest cores >= 2 + N with predicted wait <= max_wait
    # per core count from 2 + N - 1 to the cap: predicted wait per role with its interval
    wait_curve: tuple[dict[str, Any], ...] = ()
    # sentences that say why a number beside the answer seems to disagree with it
    answer_notes: tuple[str, ...] = ()
    # the most TTFT can slow at the answer from its predicted wait (its CPU work stretched by
    # 1 / (1 - wait / demand)), and the same at the wait's 90% upper end; None: no wait model
    slowdown_from_wait: float | None = None
    slowdown_from_wait_high: float | None = None
    # the one definition of enough cores (decision.enough_sentence), and the answer against it:
    # whether the predicted wait at the answer is within max_wait (None: no wait model) and,
    # where it is not, why
    definition: str = ""
    answer_within_max_wait: bool | None = None
    answer_reason: str | None = None
    # the TTFT slowdown at the answer that every surface shows: from the wait where a wait model
    # decides (slowdown_from_wait), else the TTFT curve's; slowdown_recommended stays the TTFT
    # curve's own value, evidence
    slowdown_at_answer: float | None = None
    slowdown_at_answer_high: float | None = None
    slowdown_basis: str = ""  # "wait model" or "TTFT curve"

    @property
    def tolerance(self) -> float:
        """The query's ``--tolerance``: the TTFT curve's evidence band (``ttft_curve_band``)."""
        return self.ttft_curve_band


def recommend_job(q: JobQuery, ctx: RecommendContext | None = None) -> JobRecommendation:
    """The ``--cpus-per-gpu`` for one job (see the module docstring). Without ``ctx``, the
    query's own files are loaded for this one call."""
    f = job_features(q)
    if ctx is None:
        with RecommendContext.open(
            db=q.db, fit_file=q.model_file, pricing_file=q.pricing_file
        ) as own:
            return recommend_job(q, own)
    if q.partition is not None:
        check_partition(ctx, q.partition)
    params = ctx.params
    assert f.platform is not None
    instance = ctx.book.find_instance(f.platform)
    cap, cap_source = core_cap(ctx, f.platform, instance, q.max_cpus_per_gpu, q.partition)
    current = q.current_cpus_per_gpu if q.current_cpus_per_gpu is not None else 1.0 / q.gpus
    prediction = predict(params, f, cap)
    demand = prediction.demand
    decision = decide(params, prediction, cap, q.max_wait)
    curve = job_curve(params, f, current, decision.cpus_per_gpu, q.tolerance, cap)
    note = _pathological_note(f, demand, current) if curve.now.pathological else None
    return _record(q, f, ctx, cap, cap_source, current, demand, decision, curve, note)


def _pathological_note(f: JobFeatures, demand: JobDemand, current: float) -> str:
    p = demand.parts
    below = slowdown.fewest_finite_cores(demand.demand_cores)
    if p.tokenizer_utilisation >= 1.0:
        return (
            f"pathological at any core count: the tokenizer thread is "
            f"{p.tokenizer_utilisation:.0%} busy; its queue grows without bound and requests "
            "time out whatever the cores"
        )
    return (
        f"pathological below {below} cores for the job: its CPU demand (about "
        f"{p.demand_cores:.1f} cores: API server {p.api_server_cores:.1f}, engine core "
        f"{p.engine_core_cores:.1f}, GPU workers {p.gpu_worker_cores:.1f}) is more than "
        f"{slowdown.RHO_LIMIT:g} times the {cores_per_gpu_words(current * f.gpus)} it is "
        f"given ({cores_text(current)} per GPU), beyond any overload measured; expect timeouts"
    )


def _warnings(
    params: slowdown.CurveParams,
    f: JobFeatures,
    demand: JobDemand,
    decision: Decision,
    curve: JobCurve,
    cap: int,
    current: float,
    note: str | None,
) -> list[str]:
    out = slowdown.coverage_warnings(params, platform=f.platform, gpus=f.gpus)
    if demand.tokenizer_saturated:
        rate = (
            f"; one worker sustains about {demand.rps_per_renderer_worker:.2f} requests/s of "
            f"{f.prompt_tokens:.0f}-token prompts"
            if demand.rps_per_renderer_worker
            else ""
        )
        out.append(
            f"{TOKENIZER_FLAG}: the API server's tokenizer thread is "
            f"{demand.parts.tokenizer_utilisation:.0%} busy with {f.renderer_workers} renderer "
            f"worker(s); its queue, not the cores, sets TTFT: run "
            f"--renderer-num-workers {demand.renderer_workers_needed}{rate}"
        )
    if not decision.reached:
        out.append(
            f"the node type gives {cap} cores per GPU, fewer than the {decision.cores_total} "
            f"cores asked for ({decision.basis})"
        )
    if decision.basis == "no evidence" and decision.capacity_cores > decision.cores_total:
        out.append(
            f"the fitted demand ({demand.demand_cores:.1f} cores) would need "
            f"{decision.capacity_cores} cores, but no series of {decision.evidence.family} "
            "measured it"
        )
    if note is not None:
        out.append(note)
    if current >= decision.cpus_per_gpu:
        out.append(f"the current {current:g} cores per GPU already suffice")
    if f.engine_version:
        versions = {s.get("engine_version") for s in params.meta.get("series") or []}
        if f.engine_version not in versions:
            out.append(
                f"extrapolation: no calibration series of engine version {f.engine_version} "
                f"(measured: {', '.join(sorted(v for v in versions if v))})"
            )
    return out


def _assumptions(
    q: JobQuery, f: JobFeatures, ctx: RecommendContext, decision: Decision, cap_source: str
) -> dict[str, Any]:
    params, book = ctx.params, ctx.book
    assert f.platform is not None
    instance, vcpu = book.find_instance(f.platform), book.vcpu
    validation = params.meta.get("validation") or {}
    return {
        "current_cpus_per_gpu": (
            "given"
            if q.current_cpus_per_gpu is not None
            else "Slurm's default: 1 CPU per task, one task, so 1/GPUs per GPU"
        ),
        "workload": {
            "model_params_b": f.model_params_b,
            "load_rps": f.load_rps,
            "prompt_tokens": int(f.prompt_tokens),
            "prefix_hit": f.prefix_hit,
            "prefix_hit_source": f.prefix_hit_source,
            "renderer_workers": f.renderer_workers,
            "tp": f.tp,
            "executor": f.executor,
            "engine_version": f.engine_version,
            "gpu_busy": f.gpu_busy,
            "defaults": "unset values take the model's reference (8B, 8 requests/s, 16k tokens, "
            "unique prompts, 1 renderer worker, TP = GPUs, vLLM's executor for the TP, a GPU "
            "busy all the time)",
        },
        "target": f"{enough_sentence(q.max_wait)} ({f.floor_cores} here); basis: {decision.basis}",
        "evidence": "calibration series of the configuration family (engine, GPUs, TP, executor)",
        "model": {
            "file": str(
                ctx.model_file
                or os.environ.get(slowdown.MODEL_ENV)
                or slowdown.shipped_model_path().name
            ),
            "fitted_at": params.meta.get("fitted_at"),
            "validation_error": validation.get("model"),
            "validation_metric": validation.get("metric"),
            "interval": params.interval,
            "parameters": params.named(),
        },
        "platform": f.platform,
        "cap": cap_source,
        "price": {
            "instance": instance and instance.name,
            "instance_usd_per_hour": instance and instance.usd_per_hour,
            "instance_gpus": instance and instance.gpus,
            "instance_as_of": instance and instance.as_of.isoformat(),
            "instance_source": instance.source if instance else book.no_price_reason(f.platform),
            "vcpu_basis": vcpu.basis,
            "usd_per_vcpu_hour": vcpu.usd_per_vcpu_hour,
            "vcpu_as_of": vcpu.as_of.isoformat(),
            "vcpu_source": vcpu.source,
            "rule": "extra vCPUs x per-vCPU price against instance price x GPUs / instance GPUs",
            "band": "cost_delta_pct_band: the same with each per-vCPU price of the price book "
            "(c7i compute to the g6e in-family marginal vCPU, RAM included)",
        },
    }


def _band(book: PriceBook, extra: float, gpus: int, instance: Any) -> tuple[float, float]:
    pcts = [
        cost_delta(extra, gpus, instance, v.usd_per_vcpu_hour).cost_delta_pct
        for v in book.vcpu_prices
    ]
    return min(pcts), max(pcts)


def _record(
    q: JobQuery,
    f: JobFeatures,
    ctx: RecommendContext,
    cap: int,
    cap_source: str,
    current: float,
    demand: JobDemand,
    decision: Decision,
    curve: JobCurve,
    note: str | None,
) -> JobRecommendation:
    params, book = ctx.params, ctx.book
    assert f.platform is not None
    instance = book.find_instance(f.platform)
    extra = max(0.0, (decision.cpus_per_gpu - current) * q.gpus)
    usd_per_vcpu_hour = book.vcpu.usd_per_vcpu_hour
    # pricing is a function of the decision: the extra cores at the instance's prices
    cost = None if instance is None else cost_delta(extra, q.gpus, instance, usd_per_vcpu_hour)
    cost_reason = None if instance is not None else book.no_price_reason(f.platform)
    warnings = _warnings(params, f, demand, decision, curve, cap, current, note)
    if cost_reason is not None:
        warnings.append(f"lost GPU time not priced: {cost_reason}")
    rec = decision.cpus_per_gpu
    now, at_rec = curve.now, curve.recommended
    bound = decision.wait.bound_at(rec * q.gpus) if decision.wait else None
    check = check_answer(decision, rec * q.gpus)
    regime = (
        "pathological"
        if now.pathological
        else "cpu-bound"
        if (now.slowdown or 1.0) > 1.0 + q.tolerance
        else "gpu-bound"
    )
    ample = q.ample_ttft_ms
    score = (params.meta.get("capacity") or {}).get("decision") or {}
    calibration = calibration_of(f.platform, params.meta.get("platforms_seen") or ())
    return JobRecommendation(
        gpu_type=q.gpu_type,
        gpus=q.gpus,
        tp=f.tp,
        executor=f.executor,
        cpus_per_gpu=rec,
        cores_total=rec * q.gpus,
        decision_basis=decision.basis,
        decision_reason=decision.reason,
        knee_source=decision.basis,
        capacity_cores=decision.capacity_cores,
        utilisation_target=decision.utilisation_target,
        knee_cores=curve.knee_cores,
        knee_cores_interval=curve.knee_cores_interval,
        floor_cores=f.floor_cores,
        regime=regime,
        load_regime="gpu-bound" if decision.cores_total <= f.floor_cores else "cpu-bound",
        demand_cores=demand.demand_cores,
        demand_cores_interval=demand.demand_cores_interval,
        demand_parts=demand.parts.as_dict(),
        tokenizer_utilisation=demand.parts.tokenizer_utilisation,
        tokenizer_saturated=demand.tokenizer_saturated,
        renderer_workers=f.renderer_workers,
        renderer_workers_recommended=demand.renderer_workers_needed,
        rps_per_renderer_worker=demand.rps_per_renderer_worker,
        flags=(TOKENIZER_FLAG,) if demand.tokenizer_saturated else (),
        pathological_below_cores=None
        if demand.parts.tokenizer_utilisation >= 1.0
        else slowdown.fewest_finite_cores(demand.demand_cores),
        pathological_note=note,
        slurm_option=f"--cpus-per-gpu={rec}",
        current_cpus_per_gpu=current,
        current_cores_total=current * q.gpus,
        max_cpus_per_gpu=cap,
        max_cpus_per_gpu_source=cap_source,
        ttft_curve_band=q.tolerance,
        slowdown_now=now.slowdown,
        slowdown_now_interval=(now.low, now.high),
        slowdown_recommended=at_rec.slowdown,
        slowdown_recommended_interval=(at_rec.low, at_rec.high),
        pathological_now=now.pathological,
        ttft_ms_now=None if ample is None or now.slowdown is None else ample * now.slowdown,
        ttft_ms_recommended=None
        if ample is None or at_rec.slowdown is None
        else ample * at_rec.slowdown,
        predicted_speedup=curve.speedup,
        predicted_speedup_reason=curve.speedup_reason,
        speedup_interval=curve.speedup_interval,
        speedup_is_lower_bound=False,
        extra_vcpus=extra,
        usd_per_vcpu_hour=usd_per_vcpu_hour,
        usd_per_hour_delta=extra * usd_per_vcpu_hour,  # the cores' price needs no instance
        gpu_share_usd_per_hour=None if cost is None else cost.gpu_share_usd_per_hour,
        cost_delta_pct=None if cost is None else cost.cost_delta_pct,
        cost_delta_pct_band=None if instance is None else _band(book, extra, q.gpus, instance),
        instance=None if instance is None else instance.name,
        cost_reason=cost_reason,
        evidence=decision.evidence.level,
        evidence_family=decision.evidence.family,
        evidence_series=decision.evidence.series,
        decision_score=score,
        validation=dict(params.meta.get("validation") or {}),
        warnings=tuple(warnings),
        assumptions=_assumptions(q, f, ctx, decision, cap_source),
        basis_sentence=basis_sentence(decision.basis),
        calibrated=calibration.calibrated,
        extrapolated_from=calibration.extrapolated_from,
        max_wait=q.max_wait,
        wait_knee=decision.wait.knee_cores if decision.wait else None,
        wait_curve=tuple(decision.wait.to_json_list()) if decision.wait else (),
        answer_notes=tuple(_answer_notes(q, decision, curve)),
        slowdown_from_wait=finite(bound.most) if bound else None,
        slowdown_from_wait_high=finite(bound.most_high) if bound else None,
        definition=enough_sentence(q.max_wait),
        answer_within_max_wait=check.within_max_wait,
        answer_reason=check.reason,
        slowdown_at_answer=finite(bound.most) if bound else at_rec.slowdown,
        slowdown_at_answer_high=finite(bound.most_high) if bound else at_rec.high,
        slowdown_basis=WAIT if bound else "TTFT curve",
    )


def _bound_text(decision: Decision, total: int) -> str:
    b = decision.wait.bound_at(total) if decision.wait else None
    if b is None:
        return ""
    high = "no bound" if math.isinf(b.most_high) else f"{b.most_high:.2f}x"
    return (
        f"; the predicted wait there bounds TTFT at {b.most:.2f}x of ample cores ({high} at the "
        "wait's 90% upper end: the CPU work on a request's path stretched by 1 / (1 - wait / "
        "demand))"
    )


def _answer_notes(q: JobQuery, decision: Decision, curve: JobCurve) -> list[str]:
    """Why the TTFT curve's slowdown or knee, or the capacity answer, seems to disagree with
    the answer: each case gets its sentence (one definition of enough, said once)."""
    out: list[str] = []
    # the answer's own cores (whole cores per GPU times the GPUs), where the record's curve,
    # wait and bound are read: never the basis' count before it was rounded up per GPU
    total = decision.cpus_per_gpu * q.gpus
    rec = curve.recommended
    if decision.basis == WAIT and decision.wait is not None:
        core = decision.wait.at(total, "engine_core")
        said = f"{core.wait:.0%} [{core.low:.0%}-{core.high:.0%}]" if core else "unknown"
        over = [
            p
            for r in ("engine_core", "api_server")
            if (p := decision.wait.at(total, r)) is not None and p.high > q.max_wait
        ]
        if over:
            out.append(
                "the predicted wait at the answer is under the threshold, but its 90% interval "
                f"reaches {max(p.high for p in over):.0%} ({over[0].role.replace('_', ' ')}): "
                f"{decision.cpus_per_gpu + 1} cores per GPU ({total + q.gpus}) keep more margin"
            )
        if rec.slowdown is not None and (
            rec.slowdown > 1 + q.tolerance or rec.high > 1 + q.tolerance
        ):
            shown = (
                f"puts {rec.slowdown:.2f}x at {total} cores (90% up to {rec.high:.2f}x)"
                if rec.slowdown > 1 + q.tolerance
                else f"reaches {rec.high:.2f}x at {total} cores with its 90% interval"
            )
            out.append(
                f"the TTFT curve {shown}; it is fitted to TTFT, which one GPU's runs do not "
                f"resolve (docs/model.md), while the engine core's predicted wait there is "
                f"{said}, under the {q.max_wait:.0%} at which no measured TTFT or inter-token "
                f"latency was slower{_bound_text(decision, total)}: the answer follows the wait"
            )
        if curve.knee_cores is not None and curve.knee_cores > total:
            out.append(
                f"the TTFT curve's knee ({curve.knee_cores} cores) lies above the answer for "
                "the same reason: the wait, not the TTFT fit, decides"
            )
        if q.tolerance != DEFAULT_TOLERANCE:
            out.append(
                f"--tolerance {q.tolerance:g} does not move this answer: the wait model decides, "
                f"under --max-wait {q.max_wait:g}; the tolerance bounds the TTFT curve's answer "
                "where no wait model is fitted, and the minimum cores of a policy"
            )
        if decision.capacity_cores != total:
            out.append(
                f"the capacity rule (demand at most {decision.utilisation_target:.0%} of the "
                f"cores) would give {decision.capacity_cores}; it ignores the busy-waiting GPU "
                "workers' hold on their cores and how bursts queue, which the wait model "
                "measures"
            )
    elif rec.slowdown is not None and rec.slowdown > 1 + q.tolerance:
        out.append(
            f"the TTFT curve puts {rec.slowdown:.2f}x at the {total} cores of the "
            f"{decision.basis} answer: no wait model for this executor in the model file; "
            "refit with runs that recorded their processes' wait (advisor fit)"
        )
    return out
