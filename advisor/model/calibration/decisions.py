"""Judging a core count against a series' measured knee, and choosing the utilisation target.

A decision is the recommended total cores for a series' configuration; it is judged against the
series' knee from :mod:`advisor.model.knee` (only a knee the data resolve: ``resolved`` or ``no
effect``; ``not resolved`` series are left out and counted): **within one core**, **above**
(more than one core more: cores paid for nothing) or **below** (more than one core fewer: a
slower server).

The rules compared (docs/model.md, "Judged on the decision"):

- ``model``: the capacity answer, the fewest cores with demand <= u x cores, never below 2 + N;
- ``2 + N``: vLLM's rule;
- ``2 + N within platform``: 2 + N scaled by the median knee / (2 + N) of the other series of
  the same platform with a resolved knee (1 without any);
- ``knee curve per platform``: the knee of ``log s = a log max(1, k (2 + N) / c)`` fitted on
  the other series of the platform (:func:`fit_knee_curve`).

The utilisation target ``u`` is chosen on training series only (:func:`choose_utilisation`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.model import slowdown
from advisor.model.calibration.series import SeriesInfo
from advisor.model.demand import capacity_cores, demand_of

RULES: tuple[str, ...] = ("model", "2 + N", "2 + N within platform", "knee curve per platform")
OUTCOMES: tuple[str, ...] = ("within one core", "above", "below")
# Utilisation targets tried; 1.0 is not among them (a queue at 100% has no steady state).
U_GRID: tuple[float, ...] = tuple(round(0.30 + 0.05 * i, 2) for i in range(14))
# Used when no training series resolves a knee: a classic target for a few-server queue.
DEFAULT_UTILISATION = 0.7


def floor_cores(gpus: int) -> int:
    """vLLM's guidance: at least 2 + N physical cores for N GPUs."""
    return 2 + int(gpus)


def series_demand(info: SeriesInfo, demand_values: Sequence[float]) -> float:
    """The demand (cores) the fitted parameters give a series' configuration."""
    c = info.config
    return demand_of(
        demand_values,
        load_rps=c.load_rps if c.load_rps is not None else slowdown.REF_LOAD_RPS,
        prompt_tokens=float(c.prompt_tokens or slowdown.REF_PROMPT_TOKENS),
        gpus=c.gpus,
        tp=c.tp,
        executor=c.executor,
        renderer_workers=c.renderer_workers,
    ).demand_cores


def outcome(recommended: int, knee: int) -> str:
    if abs(recommended - knee) <= 1:
        return "within one core"
    return "above" if recommended > knee else "below"


def summarise(pairs: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """Counts of each outcome over (recommended, knee) pairs, and the mean cores off."""
    outs = [outcome(r, k) for r, k in pairs]
    return {
        "series": len(pairs),
        **{o: outs.count(o) for o in OUTCOMES},
        "mean_cores_above_knee": float(np.mean([max(r - k, 0) for r, k in pairs]))
        if pairs
        else None,
        "mean_cores_below_knee": float(np.mean([max(k - r, 0) for r, k in pairs]))
        if pairs
        else None,
    }


def better(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether summary ``a`` decides better than ``b``: more within one core, or as many and
    fewer below (a slower server is worse than idle cores)."""
    return (a["within one core"], -a["below"]) > (b["within one core"], -b["below"])


@dataclass(frozen=True)
class UtilisationChoice:
    """The chosen target and why."""

    utilisation_target: float
    chosen_on: str  # "N training series with a resolved knee" or "no resolved knee: default"
    tied: tuple[float, ...]  # the targets that decided equally well


def choose_utilisation(cases: Sequence[tuple[float, int, int]]) -> UtilisationChoice:
    """The target for (demand, 2 + N, knee) cases: the best decisions (:func:`better`) over
    :data:`U_GRID`; of targets that decide equally well, the middle one."""
    if not cases:
        return UtilisationChoice(DEFAULT_UTILISATION, "no resolved knee: the default", ())
    scored = []
    for u in U_GRID:
        s = summarise([(capacity_cores(d, u, f), k) for d, f, k in cases])
        scored.append((s["within one core"], -s["below"], u))
    best = max((w, b) for w, b, _ in scored)
    tied = tuple(u for w, b, u in scored if (w, b) == best)
    return UtilisationChoice(
        tied[len(tied) // 2], f"{len(cases)} training series with a resolved knee", tied
    )


def fit_knee_curve(
    cores: np.ndarray, ref: np.ndarray, gpus: np.ndarray, log_y: np.ndarray, w: np.ndarray
) -> tuple[float, float]:
    """(a, k) of ``log s = a log max(1, k (2 + N) / c)`` (against the rows' reference cores)
    by weighted least squares: a grid over ``k``, ``a >= 0`` in closed form."""
    if cores.size == 0:
        return 0.0, 1.0
    best = (math.inf, 0.0, 1.0)
    floor = 2.0 + gpus
    for k in np.exp(np.linspace(math.log(0.2), math.log(20.0), 121)):
        x = np.log(np.maximum(1.0, k * floor / cores)) - np.where(
            np.isfinite(ref),
            np.log(np.maximum(1.0, k * floor / np.where(np.isfinite(ref), ref, 1.0))),
            0.0,
        )
        sxx = float(np.sum(w * x * x))
        a = max(float(np.sum(w * x * log_y)) / sxx, 0.0) if sxx > 0 else 0.0
        sse = float(np.sum(w * (log_y - a * x) ** 2))
        if sse < best[0]:
            best = (sse, a, float(k))
    return best[1], best[2]


def knee_curve_log(
    a: float, k: float, cores: np.ndarray, ref: np.ndarray, gpus: np.ndarray
) -> np.ndarray:
    floor = 2.0 + gpus
    own = np.log(np.maximum(1.0, k * floor / cores))
    at_ref = np.where(
        np.isfinite(ref),
        np.log(np.maximum(1.0, k * floor / np.where(np.isfinite(ref), ref, 1.0))),
        0.0,
    )
    return a * (own - at_ref)


def knee_curve_cores(a: float, k: float, gpus: int, tolerance: float) -> int:
    """The fewest whole cores where the knee curve is within ``tolerance`` of ample cores."""
    floor = 2.0 + gpus
    if a <= 0:
        return 1
    return max(1, int(math.ceil(k * floor / math.exp(math.log1p(tolerance) / a) - 1e-9)))
