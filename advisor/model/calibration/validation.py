"""Validation of the curve and of its decisions: leave one training series out, then the test split.

Curve error (the metric of :data:`VALIDATION_METRIC`) of the model and of the baselines an
admin would otherwise use, each fitted on the same training rows: ``always 1.0``; ``mean of
similar points``; ``2 + N rule`` (below 2 + N total cores the training rows' mean log slowdown
below their own 2 + N, at or above it their mean there); ``2 + N within platform`` (the same on
the platform's rows); ``knee curve per platform`` (:func:`fit_knee_curve` on the platform's
rows). Each baseline's gap to the model has a 90% paired-bootstrap interval over series.

Decisions (:mod:`advisor.model.calibration.decisions`) of every rule against each held-out series'
resolved knee; the model's utilisation target is chosen on the other training series only.

:func:`score_split` does the same once for the test series, every rule fitted on all the
training series.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from advisor.model import slowdown
from advisor.model.calibration.curvefit import fit_curve_with
from advisor.model.calibration.decisions import (
    RULES,
    choose_utilisation,
    fit_knee_curve,
    floor_cores,
    knee_curve_cores,
    knee_curve_log,
    outcome,
    series_demand,
    summarise,
)
from advisor.model.calibration.training import TrainingSet
from advisor.model.demand import capacity_cores
from advisor.progress import ProgressFn, no_progress

BASELINES = (
    "always 1.0",
    "mean of similar points",
    "2 + N rule",
    "2 + N within platform",
    "knee curve per platform",
)
VALIDATION_SCHEME = "leave one series out"
VALIDATION_METRIC = (
    "mean absolute log error of the slowdown, averaged over the rows of each "
    "held-out series, then over series (lower is better)"
)
PAIRED_BOOTSTRAP = 2000


@dataclass(frozen=True)
class SeriesScore:
    """One held-out series: its curve error by predictor, and each rule's decision."""

    series: str
    rows: int
    model: float
    baselines: dict[str, float]
    knee_status: str = "not resolved"
    knee_cores: int | None = None
    decisions: dict[str, int] = field(default_factory=dict)  # rule -> recommended total cores
    outcomes: dict[str, str] = field(default_factory=dict)  # rule -> within / above / below


@dataclass(frozen=True)
class _Fitted:
    """What every predictor learned from one set of training series."""

    values: tuple[float, ...]
    utilisation_target: float
    knee_ratio: dict[str, float]  # platform -> median knee / (2 + N)
    knee_curves: dict[str, tuple[float, float]]  # platform -> (a, k)


class _Rows:
    """The slowdown rows as arrays, computed once."""

    def __init__(self, ts: TrainingSet) -> None:
        X, y, w, labels, censored = ts.slowdown_arrays()
        cols = slowdown._columns(X) if len(y) else None
        self.X, self.y, self.w, self.labels = X, y, w, labels
        self.cores = cols["cores"] if cols else np.zeros(0)
        self.ref = cols["ref"] if cols else np.zeros(0)
        self.gpus = cols["gpus"] if cols else np.zeros(0)
        self.platform = np.array([p.platform or "?" for p in ts.points])
        is_ref = np.isclose(self.cores, self.ref)
        self.scorable = ~censored & ~is_ref & (y > 0)
        self.log_y = np.log(np.where(y > 0, y, 1.0))


def _learn(ts: TrainingSet, rows: _Rows, train: Sequence[str], cfg: Any) -> _Fitted:
    fit = fit_curve_with(ts, train, cfg)
    demand_values = fit.values[: slowdown.N_DEMAND]
    knees = [ts.series_info[s] for s in train if ts.series_info[s].resolved]
    choice = choose_utilisation(
        [
            (series_demand(i, demand_values), floor_cores(i.gpus), int(i.knee_cores or 0))
            for i in knees
        ]
    )
    ratio: dict[str, list[float]] = {}
    for i in knees:
        ratio.setdefault(i.platform or "?", []).append((i.knee_cores or 0) / floor_cores(i.gpus))
    pool = rows.scorable & np.isin(rows.labels, list(train))
    curves = {}
    for plat in set(rows.platform[pool].tolist()):
        pick = pool & (rows.platform == plat)
        curves[plat] = fit_knee_curve(
            rows.cores[pick], rows.ref[pick], rows.gpus[pick], rows.log_y[pick], rows.w[pick]
        )
    return _Fitted(
        fit.values,
        choice.utilisation_target,
        {p: float(np.median(v)) for p, v in ratio.items()},
        curves,
    )


def _curve_errors(
    rows: _Rows, fitted: _Fitted, train: Sequence[str], s: str, cfg: Any
) -> tuple[float, dict[str, float], np.ndarray, np.ndarray]:
    """(model error, baseline errors, log residuals, |relative errors|) of series ``s``."""
    idx = np.flatnonzero((rows.labels == s) & rows.scorable)
    m = slowdown.mechanism(fitted.values, rows.X[idx], cfg.pole_exponent)
    pred = np.where(m.pathological, cfg.max_slowdown, np.minimum(m.slowdown, cfg.max_slowdown))
    log_pred = np.log(pred)
    ly = rows.log_y[idx]
    pool = rows.scorable & np.isin(rows.labels, list(train))
    base: dict[str, float] = {"always 1.0": float(np.mean(np.abs(ly)))}
    sim = []
    for i in idx:
        pick = pool & (rows.gpus == rows.gpus[i]) & (rows.platform == rows.platform[i])
        if not pick.any():
            pick = pool & (rows.gpus == rows.gpus[i])
        if not pick.any():
            pick = pool
        sim.append(abs(float(np.mean(rows.log_y[pick]) if pick.any() else 0.0) - rows.log_y[i]))
    base["mean of similar points"] = float(np.mean(sim))
    floor = 2.0 + rows.gpus

    def two_plus_n(pick_pool: np.ndarray) -> float:
        below, above = pick_pool & (rows.cores < floor), pick_pool & (rows.cores >= floor)
        lb = float(np.mean(rows.log_y[below])) if below.any() else 0.0
        la = float(np.mean(rows.log_y[above])) if above.any() else 0.0
        rule = np.where(rows.cores[idx] < floor[idx], lb, la)
        return float(np.mean(np.abs(rule - ly)))

    base["2 + N rule"] = two_plus_n(pool)
    plat = rows.platform[idx[0]]
    same = pool & (rows.platform == plat)
    base["2 + N within platform"] = two_plus_n(same if same.any() else pool)
    a, k = fitted.knee_curves.get(plat, (0.0, 1.0))
    kc = knee_curve_log(a, k, rows.cores[idx], rows.ref[idx], rows.gpus[idx])
    base["knee curve per platform"] = float(np.mean(np.abs(kc - ly)))
    return (
        float(np.mean(np.abs(log_pred - ly))),
        base,
        log_pred - ly,
        np.abs(pred / np.exp(ly) - 1.0),
    )


def _decisions(ts: TrainingSet, fitted: _Fitted, s: str, tolerance: float) -> dict[str, int]:
    info = ts.series_info[s]
    g = info.gpus
    floor = floor_cores(g)
    demand = series_demand(info, fitted.values[: slowdown.N_DEMAND])
    plat = info.platform or "?"
    a, k = fitted.knee_curves.get(plat, (0.0, 1.0))
    return {
        "model": capacity_cores(demand, fitted.utilisation_target, floor),
        "2 + N": floor,
        "2 + N within platform": int(math.ceil(floor * fitted.knee_ratio.get(plat, 1.0) - 1e-9)),
        "knee curve per platform": knee_curve_cores(a, k, g, tolerance),
    }


def _score(
    ts: TrainingSet, rows: _Rows, fitted: _Fitted, train: Sequence[str], s: str, cfg: Any
) -> tuple[SeriesScore, np.ndarray, np.ndarray]:
    info = ts.series_info[s]
    n_rows = int(np.sum((rows.labels == s) & rows.scorable))
    if n_rows:
        err, base, resid, ape = _curve_errors(rows, fitted, train, s, cfg)
    else:
        err, base, resid, ape = math.nan, {}, np.zeros(0), np.zeros(0)
    dec: dict[str, int] = {}
    outs: dict[str, str] = {}
    if info.resolved and info.knee_cores is not None:
        dec = _decisions(ts, fitted, s, cfg.tolerance)
        outs = {r: outcome(c, info.knee_cores) for r, c in dec.items()}
    score = SeriesScore(s, n_rows, err, base, info.knee_status, info.knee_cores, dec, outs)
    return score, resid, ape


def _paired(scores: Sequence[SeriesScore], seed: int) -> dict[str, dict[str, Any]]:
    """Per baseline: mean error minus the model's, with a 90% paired-bootstrap interval over
    series (the same resampled series for both)."""
    curve = [sc for sc in scores if sc.rows and math.isfinite(sc.model)]
    out: dict[str, dict[str, Any]] = {}
    if not curve:
        return out
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(curve), size=(PAIRED_BOOTSTRAP, len(curve)))
    model = np.array([sc.model for sc in curve])
    for b in BASELINES:
        diff = np.array([sc.baselines[b] for sc in curve]) - model
        boots = diff[picks].mean(axis=1)
        out[b] = {
            "baseline_minus_model": float(diff.mean()),
            "interval": [float(np.quantile(boots, 0.05)), float(np.quantile(boots, 0.95))],
            "model_better": bool(np.quantile(boots, 0.05) > 0),
        }
    return out


def _table(scores: Sequence[SeriesScore], ape: Sequence[float], cfg: Any) -> dict[str, Any]:
    curve = [sc for sc in scores if sc.rows and math.isfinite(sc.model)]
    decided = [sc for sc in scores if sc.decisions]
    table: dict[str, Any] = {
        "scheme": VALIDATION_SCHEME,
        "metric": VALIDATION_METRIC,
        "series": len(curve),
        "rows": int(sum(sc.rows for sc in curve)),
        "model": float(np.mean([sc.model for sc in curve])) if curve else float("nan"),
        "baselines": {
            b: float(np.mean([sc.baselines[b] for sc in curve])) if curve else float("nan")
            for b in BASELINES
        },
        "paired_bootstrap": _paired(scores, cfg.random_state),
        "by_source_kind": {
            kind: {
                "series": len(sub),
                "model": float(np.mean([sc.model for sc in sub])),
                "baselines": {
                    b: float(np.mean([sc.baselines[b] for sc in sub])) for b in BASELINES
                },
            }
            for kind in sorted(
                {sc.series.split("|")[0].split(":")[0].split("-")[0] for sc in curve}
            )
            for sub in [
                [sc for sc in curve if sc.series.split("|")[0].split(":")[0].split("-")[0] == kind]
            ]
        },
        # the same held-out predictions as a percentage error, for a person ("±39%")
        "mape": float(np.mean(ape)) if len(ape) else float("nan"),
        "points": int(sum(sc.rows for sc in curve)),
        "method": VALIDATION_SCHEME,
    }
    table["decision"] = {
        "tolerance": cfg.tolerance,
        "judged": "recommended total cores against each series' resolved knee "
        "(advisor.model.knee): within one core, above, below",
        "series": len(decided),
        "not_resolved_excluded": sum(1 for sc in scores if sc.knee_status == "not resolved"),
        **{
            r: summarise([(sc.decisions[r], int(sc.knee_cores or 0)) for sc in decided])
            for r in RULES
        },
        "by_series": {sc.series: {"knee_cores": sc.knee_cores, **sc.decisions} for sc in decided},
    }
    return table


def validate(
    ts: TrainingSet, cfg: Any, progress: ProgressFn = no_progress
) -> tuple[dict[str, Any], tuple[SeriesScore, ...], float]:
    """Leave one training series out: every predictor learns from the other training series and
    is scored on it. Returns the ``validation`` table, the per-series scores and the held-out
    log residual spread."""
    rows = _Rows(ts)
    train = ts.training_series()
    held = [
        s for s in train if np.any((rows.labels == s) & rows.scorable) or ts.series_info[s].resolved
    ]
    scores: list[SeriesScore] = []
    resid: list[float] = []
    ape: list[float] = []
    for n, s in enumerate(held):
        others = [t for t in train if t != s]
        fitted = _learn(ts, rows, others, cfg)
        score, r, a = _score(ts, rows, fitted, others, s, cfg)
        scores.append(score)
        resid.extend(r.tolist())
        if a.size:
            ape.append(float(np.mean(a)))
        progress("leave one series out", n + 1, len(held))
    sigma = float(math.sqrt(float(np.mean(np.square(resid))))) if resid else 0.0
    return _table(scores, ape, cfg), tuple(scores), sigma


def score_split(ts: TrainingSet, cfg: Any) -> tuple[dict[str, Any], tuple[SeriesScore, ...]]:
    """The test series, scored once by predictors that learned from every training series."""
    rows = _Rows(ts)
    train = ts.training_series()
    fitted = _learn(ts, rows, train, cfg)
    scores, ape = [], []
    for s in ts.test_series():
        score, _, a = _score(ts, rows, fitted, train, s, cfg)
        if score.rows or score.decisions:
            scores.append(score)
        if a.size:
            ape.append(float(np.mean(a)))
    table = _table(scores, ape, cfg)
    table["scheme"] = table["method"] = "test split: fitted on the training series only"
    table["utilisation_target"] = fitted.utilisation_target
    return table, tuple(scores)
