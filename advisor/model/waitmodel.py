"""How long a server's processes will wait for a CPU at a given core count, fitted from the
bench's measured run-queue wait (numpy only: read on the job-submit path).

The form (docs/model.md, "The wait model"): every busy-waiting GPU worker holds one core as a
fixed load; what the API server and the engine core need on average (their demand, in cores,
from :mod:`advisor.model.demand`) takes more; the rest is the *headroom*

    h = cores - workers - (API server + engine core demand)

and each role's wait share falls by a constant factor per core of headroom, the geometric tail
of a queue whose runnable threads outnumber the free cores:

    wait(role) = demand(role) x exp(a[role, executor] + b[role, executor] x h)

(GPU workers: demand 1 each, the wait per worker). ``a`` and ``b`` are least squares on the log
of the measured wait over its demand, per role and executor, from phases whose wait is
measurable (at least :data:`MIN_WAIT`). A prediction's interval carries both the fit's
uncertainty (series resampled whole, refitted) and the scatter of the points about it (the
5-95% quantiles of the log residuals), so it brackets where a new series' wait would fall.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ROLES: tuple[str, ...] = ("engine_core", "api_server", "gpu_worker")
JUDGED: tuple[str, ...] = ("engine_core", "api_server")
MIN_WAIT = 0.002  # below this a phase's wait is at the sampler's floor: no slope information
MIN_POINTS = 3
BOOTSTRAP = 200


@dataclass(frozen=True)
class WaitPhase:
    """One measured phase: its series, executor, cores and workers, the series' demand per role
    at its most cores (what the processes need when nothing waits), and the wait per role."""

    series: str
    executor: str
    cores: int
    workers: int
    demand: Mapping[str, float]  # api_server, engine_core: cores at the series' most cores
    wait: Mapping[str, float]  # role -> share of wall time (gpu_worker: per worker)
    gpus: int = 1
    ttft_ms: float | None = None  # the phase's victim TTFT median, where it has one

    @property
    def headroom(self) -> float:
        return self.cores - self.workers - self.demand["api_server"] - self.demand["engine_core"]


def headroom(cores: float, workers: float, api_cores: float, engine_cores: float) -> float:
    return cores - workers - api_cores - engine_cores


def _role_demand(phase_demand: Mapping[str, float], role: str) -> float:
    return 1.0 if role == "gpu_worker" else max(float(phase_demand[role]), 1e-3)


def _lsq(xs: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    if len(xs) < MIN_POINTS or len({round(h, 6) for h, _ in xs}) < 2:
        return None
    a = np.array([[1.0, h] for h, _ in xs])
    y = np.array([v for _, v in xs])
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    return float(coef[0]), float(coef[1])


def _points(phases: Iterable[WaitPhase], role: str, executor: str) -> list[tuple[float, float]]:
    out = []
    for p in phases:
        w = p.wait.get(role)
        if p.executor != executor or w is None or w < MIN_WAIT:
            continue
        out.append((p.headroom, math.log(w / _role_demand(p.demand, role))))
    return out


@dataclass(frozen=True)
class RoleFit:
    """One (role, executor): its two parameters, their refits, and the residual quantiles."""

    a: float
    b: float
    refits: tuple[tuple[float, float], ...]
    residual_low: float  # 5% quantile of log(measured / fitted)
    residual_high: float  # 95%
    points: int
    series: int

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "refits": [list(r) for r in self.refits],
            "residual_low": self.residual_low,
            "residual_high": self.residual_high,
            "points": self.points,
            "series": self.series,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RoleFit:
        return cls(
            float(d["a"]),
            float(d["b"]),
            tuple((float(x), float(y)) for x, y in d.get("refits") or []),
            float(d["residual_low"]),
            float(d["residual_high"]),
            int(d["points"]),
            int(d["series"]),
        )


@dataclass(frozen=True)
class WaitFit:
    """Every fitted (role, executor), keyed ``role/executor``, and the leave-one-series-out
    scores (:func:`score`)."""

    roles: Mapping[str, RoleFit]
    scores: Mapping[str, Any] = field(default_factory=dict)

    def get(self, role: str, executor: str) -> RoleFit | None:
        return self.roles.get(f"{role}/{executor}")

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "form": "wait = demand x exp(a + b x (cores - workers - API and engine-core demand))",
            "roles": {k: v.to_json_dict() for k, v in sorted(self.roles.items())},
            "scores": dict(self.scores),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> WaitFit | None:
        if not d or not d.get("roles"):
            return None
        return cls({k: RoleFit.from_json(v) for k, v in d["roles"].items()}, d.get("scores") or {})


def fit_role(
    phases: Sequence[WaitPhase], role: str, executor: str, seed: int = 0
) -> RoleFit | None:
    """The fit of one role and executor, or None with too few measurable phases."""
    xs = _points(phases, role, executor)
    coef = _lsq(xs)
    if coef is None:
        return None
    resid = np.array([v - (coef[0] + coef[1] * h) for h, v in xs])
    series = sorted({p.series for p in phases if p.executor == executor})
    rng = np.random.default_rng(seed)
    refits = []
    for _ in range(BOOTSTRAP):
        pick = rng.choice(len(series), size=len(series), replace=True)
        chosen = [p for i in pick for p in phases if p.series == series[i]]
        c = _lsq(_points(chosen, role, executor))
        if c is not None:
            refits.append(c)
    return RoleFit(
        coef[0],
        coef[1],
        tuple(refits),
        float(np.quantile(resid, 0.05)),
        float(np.quantile(resid, 0.95)),
        len(xs),
        len(series),
    )


def fit_wait_roles(phases: Sequence[WaitPhase], seed: int = 0) -> dict[str, RoleFit]:
    roles = {}
    for executor in sorted({p.executor for p in phases}):
        for role in ROLES:
            f = fit_role(phases, role, executor, seed)
            if f is not None:
                roles[f"{role}/{executor}"] = f
    return roles


def fit_wait(
    phases: Sequence[WaitPhase],
    *,
    seed: int = 0,
    baseline_knees: Mapping[str, int | None] | None = None,
) -> WaitFit:
    """Every role and executor the phases measure, and the held-out scores."""
    return WaitFit(fit_wait_roles(phases, seed), score(phases, baseline_knees=baseline_knees))


@dataclass(frozen=True)
class WaitPrediction:
    """One role at one core count: predicted wait share and its interval."""

    role: str
    cores: int
    wait: float
    low: float
    high: float

    def to_json_dict(self) -> dict[str, Any]:
        return {"role": self.role, "cores": self.cores, "wait": self.wait, "low": self.low,
                "high": self.high}  # fmt: skip


def predict(fit: RoleFit, *, role_demand: float, h: float, cores: int, role: str) -> WaitPrediction:
    """The wait of one role at headroom ``h`` (capped at one: a share of wall time per
    thread-equivalent is at most its runnable time, which the fit never saw above 1)."""
    return predict_many(fit, role_demand=role_demand, hs=[h], cores=[cores], role=role)[0]


_MAX_EXP = 50.0


def predict_many(
    fit: RoleFit, *, role_demand: float, hs: Sequence[float], cores: Sequence[int], role: str
) -> list[WaitPrediction]:
    """:func:`predict` at each headroom of ``hs`` (``cores`` alike): the refits' quantiles in
    one array operation, since a recommendation asks for every core count up to its cap."""
    # the exponent capped where the wait is already far above its cap of one (a demand far
    # beyond the cores: millions of tokens per second) instead of overflowing
    points = [min(1.0, role_demand * math.exp(min(fit.a + fit.b * h, _MAX_EXP))) for h in hs]
    if fit.refits:
        ab = np.asarray(fit.refits, dtype=float)
        boots = role_demand * np.exp(
            np.minimum(ab[:, :1] + ab[:, 1:] * np.asarray(hs, dtype=float), _MAX_EXP)
        )
    else:
        boots = np.asarray([points], dtype=float)
    low_q, high_q = np.quantile(boots, [0.05, 0.95], axis=0)
    lows = low_q * math.exp(fit.residual_low)
    highs = high_q * math.exp(fit.residual_high)
    return [
        WaitPrediction(role, c, p, min(float(lo), p), min(1.0, max(float(hi), p)))
        for c, p, lo, hi in zip(cores, points, lows, highs, strict=True)
    ]


def wait_curve(
    fit: WaitFit,
    *,
    executor: str,
    workers: int,
    api_cores: float,
    engine_cores: float,
    core_counts: Iterable[int],
) -> list[WaitPrediction]:
    """Predicted wait per role (those fitted for the executor) at each core count."""
    demand = {"api_server": api_cores, "engine_core": engine_cores}
    counts = list(core_counts)
    hs = [headroom(c, workers, api_cores, engine_cores) for c in counts]
    by_role = {}
    for role in ROLES:
        f = fit.get(role, executor)
        if f is None or (role == "gpu_worker" and workers == 0):
            continue
        d = 1.0 if role == "gpu_worker" else max(demand[role], 1e-3)
        by_role[role] = predict_many(f, role_demand=d, hs=hs, cores=counts, role=role)
    # core count by core count, each role in ROLES order within it, as callers read it
    return [preds[i] for i in range(len(counts)) for preds in by_role.values()]


def stretch(wait: float, demand: float) -> float:
    """How many times longer a role's CPU work takes when, needing ``demand`` cores, it waits
    ``wait`` (a share of wall time) for one: the share of its needed time spent queued is
    wait / demand, so its work stretches by 1 / (1 - wait / demand); infinite where the wait
    reaches the demand (the role cannot keep up)."""
    share = wait / max(demand, 1e-3)
    return math.inf if share >= 1.0 else 1.0 / (1.0 - share)


@dataclass(frozen=True)
class SlowdownBound:
    """The most a request can slow at one core count from the wait: every judged role's CPU
    work on its path stretched (:func:`stretch`), the largest stretch bounding TTFT (the GPU's
    part does not stretch); ``high`` from the wait's interval. The least is 1 (a request whose
    CPU work is off the critical path does not slow)."""

    cores: int
    most: float
    most_high: float

    def to_json_dict(self) -> dict[str, Any]:
        return {"cores": self.cores, "most": finite(self.most), "most_high": finite(self.most_high)}


def finite(x: float) -> float | None:
    """A bound as JSON and tables carry it: None where it is unbounded."""
    return None if math.isinf(x) else x


def slowdown_bounds(
    curve: Sequence[WaitPrediction], demand: Mapping[str, float], roles: Sequence[str] = JUDGED
) -> list[SlowdownBound]:
    """:class:`SlowdownBound` at each core count of a wait curve (``demand``: cores per role at
    ample cores, as the curve was predicted with)."""
    out = []
    for c in sorted({p.cores for p in curve}):
        at = [p for p in curve if p.cores == c and p.role in roles]
        if not at:
            continue
        most = max(stretch(p.wait, demand[p.role]) for p in at)
        high = max(stretch(p.high, demand[p.role]) for p in at)
        out.append(SlowdownBound(c, most, max(high, most)))
    return out


def bound_array(
    fit: WaitFit,
    *,
    executor: str,
    workers: int,
    demand: Mapping[str, float],
    cores: np.ndarray,
    refit: int | None = None,
) -> np.ndarray | None:
    """:class:`SlowdownBound`'s ``most`` at many (fractional) core counts at once, with the
    fit or its ``refit``-th bootstrap refit; None where a judged role has no fit for the
    executor."""
    h = cores - workers - demand["api_server"] - demand["engine_core"]
    most = np.ones_like(cores, dtype=float)
    for role in JUDGED:
        f = fit.get(role, executor)
        if f is None:
            return None
        a, b = (f.a, f.b) if refit is None or not f.refits else f.refits[refit % len(f.refits)]
        share = np.minimum(1.0, np.exp(a + b * h))  # wait / demand
        with np.errstate(divide="ignore"):
            most = np.maximum(most, np.where(share >= 1.0, np.inf, 1.0 / (1.0 - share)))
    return most


def wait_knee(
    curve: Sequence[WaitPrediction], *, max_wait: float, floor: int, roles: Sequence[str] = JUDGED
) -> int | None:
    """The fewest cores at or above ``floor`` whose predicted wait of every judged role is at
    most ``max_wait``, there and at every larger count; None when no count of the curve is.
    The point prediction decides: on held-out series it finds the measured knee more often than
    the interval's upper end does (``score``; docs/model.md), and the interval is reported."""
    counts = sorted({p.cores for p in curve})
    by = {(p.cores, p.role): p for p in curve}
    knee = None
    for c in reversed(counts):
        if c < floor:
            break
        ok = all((p := by.get((c, r))) is None or p.wait <= max_wait for r in roles)
        if not ok:
            break
        knee = c
    return knee


def measured_knee(phases: Sequence[WaitPhase], max_wait: float) -> int | None:
    """One series' measured wait knee: the fewest cores whose mean wait of every judged role is
    at most ``max_wait`` there and at every larger count."""
    counts = sorted({p.cores for p in phases})
    knee = None
    for c in reversed(counts):
        at = [p for p in phases if p.cores == c]
        means = [float(np.mean(v)) for r in JUDGED if (v := [p.wait[r] for p in at if r in p.wait])]
        if any(m > max_wait for m in means):
            break
        knee = c
    return knee


def measured_slowdowns(phases: Sequence[WaitPhase]) -> dict[int, float]:
    """One series' TTFT slowdown per core count: the median TTFT there over the median at its
    most cores (counts without a TTFT left out)."""
    by: dict[int, list[float]] = {}
    for p in phases:
        if p.ttft_ms is not None and p.ttft_ms > 0:
            by.setdefault(p.cores, []).append(p.ttft_ms)
    if not by:
        return {}
    base = float(np.median(by[max(by)]))
    return {c: float(np.median(v)) / base for c, v in by.items()}


def _bound_check(
    measured: Mapping[int, float], bounds: Mapping[int, float], tolerance: float
) -> tuple[int, int, float]:
    """(core counts compared, counts whose measured slowdown is within ``tolerance`` of the
    bound or under it, the largest measured / bound)."""
    pairs = [(measured[c], bounds[c]) for c in measured if c in bounds]
    held = sum(m <= b * (1 + tolerance) for m, b in pairs)
    worst = max((m / b for m, b in pairs if not math.isinf(b)), default=0.0)
    return len(pairs), held, worst


def score(
    phases: Sequence[WaitPhase],
    max_wait: float = 0.15,
    *,
    baseline_knees: Mapping[str, int | None] | None = None,
    tolerance: float = 0.10,
) -> dict[str, Any]:
    """Leave one series out: refit without it, predict its phases; mean absolute error of the
    wait share per role (all phases, measurable or not), and the wait knee predicted against
    the series' measured one (cores off), beside vLLM's 2 + N and, where ``baseline_knees``
    gives one per series, the TTFT knee curve's knee. Then the TTFT slowdown bound
    (:func:`slowdown_bounds`) against each series' measured slowdown: from its measured wait
    (the mechanism alone) and from the held-out prediction."""
    series = sorted({p.series for p in phases})
    errors: dict[str, list[float]] = {r: [] for r in ROLES}
    knee_off: list[float] = []
    floor_off: list[float] = []
    curve_off: list[float] = []
    checks = {"measured_wait": [0, 0, 0.0], "predicted_wait": [0, 0, 0.0]}
    for s in series:
        train = [p for p in phases if p.series != s]
        test = [p for p in phases if p.series == s]
        truth = measured_knee(test, max_wait)
        held = fit_wait_roles(train)
        t0 = test[0]
        counts = sorted({p.cores for p in test})
        curve = wait_curve(
            WaitFit(held),
            executor=t0.executor,
            workers=t0.workers,
            api_cores=t0.demand["api_server"],
            engine_cores=t0.demand["engine_core"],
            core_counts=counts,
        )
        knee = wait_knee(curve, max_wait=max_wait, floor=counts[0])
        if truth is not None and knee is not None:
            knee_off.append(abs(knee - truth))
            floor_off.append(abs(max(counts[0], 2 + t0.gpus) - truth))
            base = (baseline_knees or {}).get(s)
            if base is not None:
                curve_off.append(abs(base - truth))
        slow = measured_slowdowns(test)
        if slow:
            demand = {r: t0.demand[r] for r in JUDGED}
            by_cores: dict[int, list[WaitPhase]] = {}
            for p in test:
                by_cores.setdefault(p.cores, []).append(p)
            from_measured = {
                c: max(
                    stretch(float(np.mean([p.wait.get(r, 0.0) for p in ps])), demand[r])
                    for r in JUDGED
                )
                for c, ps in by_cores.items()
            }
            from_held = {b.cores: b.most for b in slowdown_bounds(curve, demand)}
            for key, bounds in (("measured_wait", from_measured), ("predicted_wait", from_held)):
                n, kept, worst = _bound_check(slow, bounds, tolerance)
                row = checks[key]
                row[0] += n
                row[1] += kept
                row[2] = max(row[2], worst)
        for executor in sorted({p.executor for p in test}):
            for role in ROLES:
                f = fit_role(train, role, executor)
                if f is None:
                    continue
                for p in test:
                    if p.executor != executor or p.wait.get(role) is None:
                        continue
                    d = _role_demand(p.demand, role)
                    pred = min(1.0, d * math.exp(f.a + f.b * p.headroom))
                    errors[role].append(abs(pred - float(p.wait[role])))
    return {
        "metric": "mean absolute error of the wait share, leave one series out",
        "series": len(series),
        "max_wait": max_wait,
        "knee_cores_off": float(np.mean(knee_off)) if knee_off else None,
        "floor_cores_off": float(np.mean(floor_off)) if floor_off else None,
        "knee_curve_cores_off": float(np.mean(curve_off)) if curve_off else None,
        "knees_compared": len(knee_off),
        "knee_curve_compared": len(curve_off),
        "slowdown_bound": {
            "tolerance": tolerance,
            **{
                key: {"core_counts": n, "held": held, "largest_measured_over_bound": worst}
                for key, (n, held, worst) in checks.items()
            },
        },
        **{
            role: {"mae": float(np.mean(e)), "max": float(np.max(e)), "phases": len(e)}
            for role, e in errors.items()
            if e
        },
    }
