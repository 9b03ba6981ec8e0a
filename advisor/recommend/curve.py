"""The job's TTFT curve at two core counts (now and recommended), from the same demand.

Each slowdown is the fitted curve's (:mod:`advisor.model.slowdown`: the queueing form over the
demand, processor sharing once the demand nears or passes the cores) with a 90% interval over
the fit's series-bootstrap refits (which refit the demand too, so its uncertainty is carried
through), widened by the held-out spread. Where a core count is pathological (demand beyond
twice the cores, or a saturated tokenizer thread) there is no number: the slowdown is None and
the speedup is None with the reason. A speedup is reported only with a
finite interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from advisor.model import slowdown
from advisor.recommend.query import JobFeatures


@dataclass(frozen=True)
class CurvePoint:
    """The slowdown against ample cores at one core count (None where pathological)."""

    slowdown: float | None
    low: float | None
    high: float  # inf: unbounded
    pathological: bool


@dataclass(frozen=True)
class JobCurve:
    now: CurvePoint
    recommended: CurvePoint
    speedup: float | None  # TTFT now over TTFT recommended
    speedup_interval: tuple[float, float] | None
    speedup_reason: str | None  # why speedup is None
    knee_cores: int | None  # fewest total cores within the tolerance (the curve's)
    knee_cores_interval: tuple[int | None, int | None]


def _point(pred: slowdown.Prediction, i: int) -> CurvePoint:
    patho = bool(pred.pathological[i])
    return CurvePoint(
        None if patho else float(pred.slowdown[i]),
        None if patho else float(pred.low[i]),
        float(pred.high[i]),
        patho,
    )


def _speedup(
    params: slowdown.CurveParams, X: np.ndarray, point: slowdown.Mechanism, now: CurvePoint
) -> tuple[float | None, tuple[float, float] | None, str | None]:
    if now.pathological:
        return (
            None,
            None,
            (
                "pathological at the current cores: the CPU demand is more than "
                f"{slowdown.RHO_LIMIT:g} times them, beyond any measured overload (or the "
                "tokenizer saturated), so no slowdown is a number"
            ),
        )
    speed = float(point.slowdown[0] / point.slowdown[1])
    boots = slowdown.bootstrap_curves(params, X)
    if boots.shape[0] == 0:
        return None, None, "the model file has no bootstrap refits to give an interval"
    with np.errstate(invalid="ignore", divide="ignore"):
        r = boots[:, 0] / boots[:, 1]
    r = np.where(np.isfinite(r), r, 1e300)  # a pathological refit: no finite ratio
    lo, hi = float(np.quantile(r, 0.05)), float(np.quantile(r, 0.95))
    if hi >= 1e299:
        return (
            None,
            None,
            (
                "more than 5% of the fit's refits put the current cores in the pathological region: "
                "the speedup has no finite interval"
            ),
        )
    return speed, (min(lo, speed), max(hi, speed)), None


def job_curve(
    params: slowdown.CurveParams,
    f: JobFeatures,
    current_cpus_per_gpu: float,
    recommended_cpus_per_gpu: int,
    tolerance: float,
    cap: int,
) -> JobCurve:
    X = np.asarray(f.rows([current_cpus_per_gpu, float(recommended_cpus_per_gpu)]))
    point = slowdown.mechanism(params.values, X, params.pole_exponent)
    pred = slowdown.predict(params, X)
    now, rec = _point(pred, 0), _point(pred, 1)
    speed, interval, why = _speedup(params, X, point, now)
    knee = slowdown.knee_total_cores(params, f.template, tolerance, cap * f.gpus)
    knees = slowdown.knees_total_cores(
        params, f.template, tolerance, cap * f.gpus, params.bootstrap_values
    )
    if knees:
        ks = np.array([math.inf if k is None else k for k in knees], dtype=float)
        lo_k = np.quantile(ks, 0.05, method="lower")
        hi_k = np.quantile(ks, 0.95, method="higher")
        k_int: tuple[int | None, int | None] = (
            None if math.isinf(lo_k) else int(lo_k),
            None if math.isinf(hi_k) else int(hi_k),
        )
    else:
        k_int = (knee, knee)
    return JobCurve(now, rec, speed, interval, why, knee, k_int)
