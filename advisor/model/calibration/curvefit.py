"""Fitting the curve on chosen series: the demand from measured CPU, then the TTFT scale.

Two steps, so that the demand (what decides cores) comes from the per-process CPU the bench
measures, which repeats far better than TTFT, and never from the published speedups:

1. :func:`advisor.model.demand.fit_demand` on the CPU observations of the chosen series;
2. ``k_cpu`` and ``gpu_weight`` (how much of TTFT the CPU wait is) by weighted least squares
   on the chosen series' slowdown rows, the demand held fixed
   (:func:`advisor.model.estimator.fit_values` with a mask).

The bootstrap resamples whole series and repeats both steps on each resample, so the interval
of a slowdown (and of the GPU time lost) carries the demand's uncertainty through.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from advisor.model import slowdown
from advisor.model.calibration.training import TrainingSet, cpu_observations
from advisor.model.demand import CpuObservation, DemandFit, fit_demand


@dataclass(frozen=True)
class CurveFit:
    """Parameters (:data:`advisor.model.slowdown.PARAM_NAMES`), their refits, the demand's sources."""

    values: tuple[float, ...]
    bootstrap_values: tuple[tuple[float, ...], ...]
    demand: DemandFit


def _fit_scale(
    ts: TrainingSet,
    rows: np.ndarray,
    demand_values: tuple[float, ...],
    *,
    alpha: float,
    max_slowdown: float,
    censored_weight: float,
    pole_exponent: float,
) -> tuple[float, ...]:
    from advisor.model.estimator import fit_values

    start = np.asarray([*demand_values, *slowdown.PRIOR[slowdown.N_DEMAND :]], dtype=float)
    if rows.size == 0:
        return tuple(float(v) for v in start)
    X, y, w, _, _ = ts.slowdown_arrays()
    fixed = np.arange(len(start)) < slowdown.N_DEMAND
    values = fit_values(
        X[rows],
        y[rows],
        w[rows],
        alpha=alpha,
        max_slowdown=max_slowdown,
        censored_weight=censored_weight,
        pole_exponent=pole_exponent,
        start=start,
        fixed=fixed,
    )
    return tuple(float(v) for v in values)


def fit_curve(
    ts: TrainingSet,
    series: Iterable[str],
    *,
    alpha: float = 0.1,
    max_slowdown: float = slowdown.DISPLAY_CAP,
    censored_weight: float = 0.01,
    pole_exponent: float = slowdown.DEFAULT_POLE_EXPONENT,
    n_bootstrap: int = 0,
    seed: int = 0,
) -> CurveFit:
    """Fit on the rows of ``series`` only; ``n_bootstrap`` refits on series resampled with
    replacement (deterministic given ``seed``)."""
    chosen = sorted(set(series))
    labels = np.asarray(ts.series)
    kw: dict[str, float] = {
        "alpha": alpha,
        "max_slowdown": max_slowdown,
        "censored_weight": censored_weight,
        "pole_exponent": pole_exponent,
    }
    obs_all = cpu_observations(ts, set(chosen))
    demand = fit_demand(obs_all, n_bootstrap=0)
    rows = np.flatnonzero(np.isin(labels, chosen)) if labels.size else np.array([], dtype=int)
    values = _fit_scale(ts, rows, demand.values, **kw)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(int(n_bootstrap) if chosen else 0):
        pick = [chosen[int(i)] for i in rng.integers(0, len(chosen), size=len(chosen))]
        obs: list[CpuObservation] = []
        for n, s in enumerate(pick):
            # a series drawn twice is two series (two points of the API server's line)
            obs.extend(replace(o, series=f"{o.series}#{n}") for o in obs_all if o.series == s)
        d = fit_demand(obs, n_bootstrap=0)
        b_rows = np.concatenate(
            [np.flatnonzero(labels == s) for s in pick] or [np.array([], dtype=int)]
        )
        boots.append(_fit_scale(ts, b_rows, d.values, **kw))
    boot_demand = tuple(b[: slowdown.N_DEMAND] for b in boots)
    demand = DemandFit(demand.values, boot_demand, demand.sources, demand.series)
    return CurveFit(values, tuple(boots), demand)


class CurveKnobs(Protocol):
    """The fit settings a config carries (``FitConfig`` and the validation's config alike)."""

    @property
    def alpha(self) -> float: ...
    @property
    def max_slowdown(self) -> float: ...
    @property
    def censored_weight(self) -> float: ...
    @property
    def pole_exponent(self) -> float: ...


def fit_curve_with(
    ts: TrainingSet, series: Iterable[str], cfg: CurveKnobs, **more: int
) -> CurveFit:
    """:func:`fit_curve` with the settings of ``cfg`` (``more``: ``n_bootstrap``, ``seed``), so
    that every fit of one calibration passes the same four."""
    return fit_curve(
        ts,
        series,
        alpha=cfg.alpha,
        max_slowdown=cfg.max_slowdown,
        censored_weight=cfg.censored_weight,
        pole_exponent=cfg.pole_exponent,
        **more,
    )
