"""The measured link between a job's CPU pressure and the wait that defines enough cores.

The bench records, in every phase, each engine process's run-queue wait (the quantity
``--max-wait`` bounds) and the CPU pressure (PSI) over the same wall time: of the engine's own
cgroup where the bench could make one (``psi_cgroup_*_share``, the very counter the node
collector reads on production jobs), else of the whole machine (``psi_cpu_*_share``; on a lent
machine the engine is nearly all that runs). Per executor, scope and PSI kind this module fits

    log(psi share) = a + b x log(wait share)

on the phases whose wait is at least :data:`MIN_WAIT` (below it, the median PSI of those
phases is the link's floor: what the other tasks show when nothing waits), once per role
(engine core, API server) and for the worse of the two (``worst``, the role the definition of
enough cores bounds), with intervals from refits over series resampled with replacement.
``--starved-psi``'s default is this link read at ``--max-wait``'s (docs/pressure.md, "The
link"); :func:`predicted_stall` reads it after the demand and wait models, so the model's
answer can be set beside a cluster's measured curve.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# below it a phase's PSI is the floor of the machine's other tasks (0.001-0.002), not the engine
MIN_WAIT = 0.01
MIN_CELLS = 6
MIN_SERIES = 2
BOOTSTRAP = 200
INTERVAL = 0.90
ROLES = ("engine_core", "api_server", "worst")
WAIT_METRICS = {"wait_engine_core_share": "engine_core", "wait_api_server_share": "api_server"}
PSI_METRICS = {
    "psi_cgroup_some_share": ("cgroup", "some"),
    "psi_cgroup_full_share": ("cgroup", "full"),
    "psi_cpu_some_share": ("machine", "some"),
    # the machine-wide `full` line of /proc/pressure/cpu is always zero (Linux 5.13 on): not fitted
}


@dataclass(frozen=True)
class LinkCell:
    """One bench phase: its series and executor, its wait per role, and its PSI shares keyed
    ``scope/kind``."""

    series: str
    executor: str
    cores: int
    wait: Mapping[str, float]
    psi: Mapping[str, float]

    def wait_of(self, role: str) -> float | None:
        if role == "worst":
            known = [self.wait[r] for r in ("engine_core", "api_server") if r in self.wait]
            return max(known) if len(known) == 2 else None
        return self.wait.get(role)


@dataclass(frozen=True)
class PsiLink:
    """``log(psi) = a + b log(wait)`` for one role, executor, scope and kind, with its refits."""

    role: str
    executor: str
    scope: str
    kind: str
    a: float
    b: float
    refits: tuple[tuple[float, float], ...]
    cells: int
    series: int
    # the median PSI of the phases below MIN_WAIT: what the other tasks show when nothing waits
    floor: float = 0.0

    @property
    def key(self) -> str:
        return link_key(self.role, self.executor, self.scope, self.kind)

    def psi_at(self, wait: float) -> tuple[float, float, float]:
        """The PSI share at a wait share: the fit's, and the interval's two ends."""
        x = math.log(max(wait, 1e-9))
        mid = min(max(math.exp(self.a + self.b * x), self.floor), 1.0)
        if not self.refits:
            return mid, mid, mid
        import numpy as np

        vals = np.clip(np.exp([a + b * x for a, b in self.refits]), self.floor, 1.0)
        tail = (1 - INTERVAL) / 2
        return mid, float(np.quantile(vals, tail)), float(np.quantile(vals, 1 - tail))

    def wait_at(self, psi: float) -> float:
        """The wait share the fit puts at a PSI share (its inverse)."""
        return min(math.exp((math.log(max(psi, 1e-9)) - self.a) / self.b), 1.0)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "executor": self.executor,
            "scope": self.scope,
            "kind": self.kind,
            "a": self.a,
            "b": self.b,
            "refits": [list(r) for r in self.refits],
            "cells": self.cells,
            "series": self.series,
            "floor": self.floor,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PsiLink:
        return cls(
            str(d["role"]),
            str(d["executor"]),
            str(d["scope"]),
            str(d["kind"]),
            float(d["a"]),
            float(d["b"]),
            tuple((float(x), float(y)) for x, y in d.get("refits") or []),
            int(d["cells"]),
            int(d["series"]),
            float(d.get("floor") or 0.0),
        )


def link_key(role: str, executor: str, scope: str, kind: str) -> str:
    return f"{role}/{executor}/{scope}/{kind}"


def _xy(cells: Sequence[LinkCell], role: str, psi_key: str) -> tuple[Any, Any]:
    import numpy as np

    xs, ys = [], []
    for c in cells:
        w, p = c.wait_of(role), c.psi.get(psi_key)
        if w is None or p is None or w < MIN_WAIT or p <= 0:
            continue
        xs.append(math.log(w))
        ys.append(math.log(p))
    return np.array(xs), np.array(ys)


def _line(x: Any, y: Any) -> tuple[float, float] | None:
    import numpy as np
    from sklearn.linear_model import LinearRegression

    if len(x) < MIN_CELLS or np.ptp(x) <= 0:
        return None
    m = LinearRegression().fit(x.reshape(-1, 1), y)
    return float(m.intercept_), float(m.coef_[0])


def fit_link(
    cells: Sequence[LinkCell], role: str, executor: str, scope: str, kind: str, seed: int = 0
) -> PsiLink | None:
    """The link of one role, executor, scope and kind, or None with fewer than
    :data:`MIN_CELLS` phases or :data:`MIN_SERIES` series that measure it."""
    mine = [c for c in cells if c.executor == executor]
    psi_key = f"{scope}/{kind}"
    x, y = _xy(mine, role, psi_key)
    coef = _line(x, y)
    series = sorted({c.series for c in mine if c.psi.get(psi_key) is not None})
    if coef is None or len(series) < MIN_SERIES:
        return None
    import numpy as np

    by_series = {s: [c for c in mine if c.series == s] for s in series}
    rng = np.random.default_rng(seed)
    refits = []
    for _ in range(BOOTSTRAP):
        pick = rng.choice(len(series), size=len(series), replace=True)
        c = _line(*_xy([cell for i in pick for cell in by_series[series[i]]], role, psi_key))
        if c is not None:
            refits.append(c)
    quiet = [
        p
        for c in mine
        if (w := c.wait_of(role)) is not None
        and w < MIN_WAIT
        and (p := c.psi.get(psi_key)) is not None
    ]
    floor = float(np.median(quiet)) if quiet else 0.0
    return PsiLink(
        role, executor, scope, kind, coef[0], coef[1], tuple(refits), len(x), len(series), floor
    )


def fit_links(cells: Sequence[LinkCell], seed: int = 0) -> dict[str, PsiLink]:
    """Every link the cells measure (``advisor.model.calibration.waits.link_cells``), keyed by
    :func:`link_key`."""
    out = {}
    for executor in sorted({c.executor for c in cells if c.executor}):
        for scope, kind in PSI_METRICS.values():
            for role in ROLES:
                f = fit_link(cells, role, executor, scope, kind, seed)
                if f is not None:
                    out[f.key] = f
    return out


def links_to_json(links: Mapping[str, PsiLink]) -> dict[str, Any]:
    return {
        "form": "log(psi share) = a + b x log(wait share), phases with wait >= "
        f"{MIN_WAIT}; refits over series",
        "links": {k: v.to_json_dict() for k, v in sorted(links.items())},
    }


def links_from_json(d: Mapping[str, Any] | None) -> dict[str, PsiLink]:
    if not d:
        return {}
    return {k: PsiLink.from_json(v) for k, v in (d.get("links") or {}).items()}


def best_link(
    links: Mapping[str, PsiLink], role: str = "worst", executor: str = "mp", kind: str = "some"
) -> PsiLink | None:
    """The engine cgroup's link where the bench measured one, else the machine's."""
    for scope in ("cgroup", "machine"):
        link = links.get(link_key(role, executor, scope, kind))
        if link is not None:
            return link
    return None


# --starved-psi's default: the shipped link (worst role, mp executor: every GPU worker of a
# TP >= 2 job busy-waits) read at --max-wait's default of 0.15; tests/test_psilink.py keeps the
# two equal, and a change needs a new advisor.derived.cube.CUBE_RULES_VERSION
STARVED_PSI_DEFAULT = 0.075


def shipped_links(model: str | None = None) -> dict[str, PsiLink]:
    """The links of the fitted model (``advisor fit`` stores them beside the wait model)."""
    from advisor.model.slowdown import load_params

    return links_from_json(load_params(model).meta.get("psi_link"))


def starved_psi_for(
    max_wait: float, links: Mapping[str, PsiLink], executor: str = "mp"
) -> tuple[float, float, float] | None:
    """The PSI ``some`` share of a job whose worse role waits ``max_wait`` of the time (the
    fit's, and its interval), or None where no link was measured for the executor."""
    link = best_link(links, "worst", executor, "some")
    return link.psi_at(max_wait) if link is not None else None


def link_report(max_wait: float, model: str | None = None) -> dict[str, Any]:
    """Every shipped link read at ``max_wait``: one row per role, executor, scope and kind with
    the PSI share there and its interval, and the ``--starved-psi`` that ``max_wait`` implies
    (``advisor pressure link``)."""
    from advisor.model.waitknee import check_max_wait

    check_max_wait(max_wait)
    links = shipped_links(model)
    rows = []
    for key, link in sorted(links.items()):
        mid, low, high = link.psi_at(max_wait)
        rows.append(
            {
                "link": key,
                "role": link.role,
                "executor": link.executor,
                "scope": link.scope,
                "kind": link.kind,
                "a": link.a,
                "b": link.b,
                "phases": link.cells,
                "series": link.series,
                "psi_at_max_wait": mid,
                "psi_low": low,
                "psi_high": high,
            }
        )
    implied = starved_psi_for(max_wait, links)
    basis = best_link(links)
    return {
        "max_wait": max_wait,
        "starved_psi": implied[0] if implied else None,
        "starved_psi_low": implied[1] if implied else None,
        "starved_psi_high": implied[2] if implied else None,
        "starved_psi_default": STARVED_PSI_DEFAULT,
        "basis": basis.key if basis is not None else None,
        "links": rows,
    }


@dataclass(frozen=True)
class StallPrediction:
    """The model's PSI ``some`` share of a serving job at a number of cores per GPU: the wait
    model's worse role through the link, with an interval spanning both."""

    cores_per_gpu: float
    cores_total: int
    wait: float
    psi: float
    low: float
    high: float


def predicted_stall(
    params: Any,
    *,
    gpus: int,
    cores_per_gpu: Sequence[float],
    load_rps: float,
    prompt_tokens: float,
    executor: str | None = None,
    links: Mapping[str, PsiLink] | None = None,
) -> list[StallPrediction] | None:
    """The stall a job of ``gpus`` GPUs serving ``load_rps`` requests of ``prompt_tokens``
    tokens is predicted to show at each of ``cores_per_gpu`` (the CPU demand model, the wait
    model, then the link: one mechanism from the bench to the cluster's counter), or None
    where the model file has no wait fit or no link for the executor. A share below one core
    per GPU is read at that many cores in all, at least one."""
    from advisor.model.demand import default_executor, demand_of
    from advisor.model.slowdown import N_DEMAND
    from advisor.model.waitmodel import WaitFit, wait_curve

    ex = executor or default_executor(gpus)
    fit = WaitFit.from_json(params.meta.get("wait"))
    link = best_link(links if links is not None else links_from_json(params.meta.get("psi_link")),
                     "worst", ex, "some")  # fmt: skip
    if fit is None or fit.get("engine_core", ex) is None or link is None:
        return None
    parts = demand_of(
        params.values[:N_DEMAND], load_rps=load_rps, prompt_tokens=prompt_tokens, gpus=gpus,
        tp=gpus, executor=ex,
    )  # fmt: skip
    totals = [max(1, round(c * gpus)) for c in cores_per_gpu]
    curve = wait_curve(
        fit, executor=ex, workers=gpus if ex == "mp" else 0, api_cores=parts.api_server_cores,
        engine_cores=parts.engine_core_cores, core_counts=sorted(set(totals)),
    )  # fmt: skip
    out = []
    for c, total in zip(cores_per_gpu, totals, strict=True):
        roles = [p for p in curve if p.cores == total and p.role in ("engine_core", "api_server")]
        worst = max(roles, key=lambda p: p.wait)
        low = max(p.low for p in roles)
        high = max(p.high for p in roles)
        mid = link.psi_at(worst.wait)[0]
        out.append(
            StallPrediction(c, total, worst.wait, mid, link.psi_at(low)[1], link.psi_at(high)[2])
        )
    return out
