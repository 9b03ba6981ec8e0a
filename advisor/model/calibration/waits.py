"""The wait model's data from calibration points: each bench phase's run-queue wait and CPU per
process role (``wait_*_share`` and ``busy_*_cores`` points of one run), its series, and the
series' demand at its most cores (:class:`advisor.model.waitmodel.WaitPhase`)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from advisor.model.calibration.points import CalibrationPoint
from advisor.model.calibration.series import SeriesConfig, config_of, identity_of_notes
from advisor.model.psilink import PSI_METRICS, LinkCell
from advisor.model.psilink import WAIT_METRICS as LINK_WAIT_METRICS
from advisor.model.waitmodel import WaitFit, WaitPhase, fit_wait

TTFT_METRIC = "ttft_p50_ms"
WAIT_POINT_METRICS = {
    "wait_api_server_share": ("wait", "api_server"),
    "wait_engine_core_share": ("wait", "engine_core"),
    "wait_worker_share": ("wait", "gpu_worker"),
    "busy_api_server_cores": ("busy", "api_server"),
    "busy_engine_core_cores": ("busy", "engine_core"),
    "gpu_busy_share": ("gpu", "busy"),
}


def series_name(p: CalibrationPoint) -> tuple[str, SeriesConfig]:
    """The series a wait point belongs to (one curve of one campaign), and its configuration."""
    c = config_of(p)
    ident = identity_of_notes(p.notes).get("series") or ""
    series = "|".join(
        str(x)
        for x in (c.platform, c.engine_version, c.model, c.gpus, c.tp, c.executor,
                  c.renderer_workers, c.workload, c.load_rps, c.prompt_tokens, ident)
    )  # fmt: skip
    return series, c


def series_configs(points: Sequence[CalibrationPoint]) -> dict[str, SeriesConfig]:
    """The configuration of each series :func:`wait_phases` names."""
    return dict(series_name(p) for p in points if p.metric in WAIT_POINT_METRICS)


# a series' configuration and its GPUs' busy share at its most cores -> cores per role
DemandFn = Callable[[SeriesConfig, float], Mapping[str, float]]


def wait_phases(
    points: Sequence[CalibrationPoint], demand_of: DemandFn | None = None
) -> list[WaitPhase]:
    """One phase per bench run that recorded its processes' wait (with its victim TTFT median
    where the run has one). Each series' demand per role is what its processes used at its
    most cores, or, with ``demand_of``, what the demand model predicts for its configuration
    (as ``recommend`` will have it)."""
    runs: dict[str, dict[str, Any]] = defaultdict(lambda: {"wait": {}, "busy": {}, "gpu": {}})
    ttft: dict[str, float] = {}
    for p in points:
        if p.metric == TTFT_METRIC and p.value is not None:
            ttft[p.source] = float(p.value)
        kind = WAIT_POINT_METRICS.get(p.metric)
        if kind is None or p.value is None or p.cores is None:
            continue
        series, c = series_name(p)
        r = runs[p.source]
        r.update(
            series=series, config=c, executor=c.executor, cores=int(p.cores), gpus=c.gpus,
            src=p.source,
        )  # fmt: skip
        r[kind[0]][kind[1]] = float(p.value)
    by_series: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in runs.values():
        if {"api_server", "engine_core"} <= set(r["busy"]):
            by_series[r["series"]].append(r)
    phases = []
    for series, members in sorted(by_series.items()):
        most = max(r["cores"] for r in members)
        top = [r for r in members if r["cores"] == most]
        demand = (
            dict(demand_of(top[0]["config"], _mean_busy(top)))
            if demand_of is not None
            else {
                role: sum(r["busy"][role] for r in top) / len(top)
                for role in ("api_server", "engine_core")
            }
        )
        for r in members:
            if not r["wait"]:
                continue
            workers = r["gpus"] if r["executor"] == "mp" else 0
            phases.append(
                WaitPhase(
                    series,
                    r["executor"],
                    r["cores"],
                    workers,
                    demand,
                    dict(r["wait"]),
                    r["gpus"],
                    ttft.get(r["src"]),
                )
            )
    return phases


def _mean_busy(runs: Sequence[dict[str, Any]]) -> float:
    """The runs' mean GPU busy share (1 where none measured it)."""
    vals = [r["gpu"]["busy"] for r in runs if "busy" in r["gpu"]]
    return sum(vals) / len(vals) if vals else 1.0


def fit_wait_points(
    points: Sequence[CalibrationPoint],
    seed: int = 0,
    baseline: Callable[[SeriesConfig], int | None] | None = None,
    demand_of: DemandFn | None = None,
) -> WaitFit | None:
    """The wait model of the points, or None where no run recorded its processes' wait;
    ``baseline`` gives a series' knee by another rule (the TTFT knee curve), scored beside;
    ``demand_of``: see :func:`wait_phases`."""
    phases = wait_phases(points, demand_of)
    if not phases:
        return None
    knees = None
    if baseline is not None:
        knees = {s: baseline(c) for s, c in series_configs(points).items()}
    return fit_wait(phases, seed=seed, baseline_knees=knees)


def link_cells(points: Sequence[CalibrationPoint]) -> list[LinkCell]:
    """One cell per bench phase (the points sharing a ``source``) that recorded both a wait
    and a PSI share (:mod:`advisor.model.psilink`)."""
    runs: dict[str, dict[str, Any]] = defaultdict(lambda: {"wait": {}, "psi": {}})
    for p in points:
        role = LINK_WAIT_METRICS.get(p.metric)
        scope_kind = PSI_METRICS.get(p.metric)
        if p.value is None or p.cores is None or (role is None and scope_kind is None):
            continue
        r = runs[p.source]
        series, config = series_name(p)
        r.update(series=series, executor=config.executor, cores=int(p.cores))
        if role is not None:
            r["wait"][role] = float(p.value)
        elif scope_kind is not None:
            r["psi"]["/".join(scope_kind)] = float(p.value)
    return [
        LinkCell(r["series"], r["executor"], r["cores"], dict(r["wait"]), dict(r["psi"]))
        for _, r in sorted(runs.items())
        if r["wait"] and r["psi"]
    ]


# how far a measured series' requests/s and prompt tokens may be from a load to be shown as its
# measurement: the wait moves with the demand, about in proportion to tokens/s near the knee
MATCH_SHARE = 0.15


def measured_waits(
    points: Sequence[CalibrationPoint],
    *,
    gpus: int,
    tp: int,
    executor: str,
    renderer_workers: int,
    load_rps: float,
    prompt_tokens: float,
    within: float = MATCH_SHARE,
) -> list[dict[str, Any]]:
    """The measured run-queue wait of the engine core and the API server per core count, of
    every calibration series of the same GPUs, TP, executor and renderer workers whose
    requests/s and prompt tokens are each within ``within`` of the load's: one row per series,
    role and core count with the median over its phases and their range. Empty where no
    series matches (the chart then shows the prediction alone)."""
    phases: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    labels: dict[str, str] = {}

    def near(measured: float | None, wanted: float) -> bool:
        return measured is not None and wanted > 0 and abs(measured / wanted - 1) <= within

    for p in points:
        kind = WAIT_POINT_METRICS.get(p.metric)
        if kind is None or kind[0] != "wait" or kind[1] == "gpu_worker":
            continue
        if p.value is None or p.cores is None:
            continue
        series, c = series_name(p)
        if (c.gpus, c.tp, c.executor, c.renderer_workers) != (gpus, tp, executor, renderer_workers):
            continue
        if not (near(c.load_rps, load_rps) and near(c.prompt_tokens, prompt_tokens)):
            continue
        phases[(series, kind[1], int(p.cores))].append(float(p.value))
        labels[series] = (
            f"{c.platform} {c.workload or ''} {c.load_rps:g}/s x {c.prompt_tokens:,} tokens"
            f"{f', {c.measured_on}' if c.measured_on else ''}"
        )
    rows = []
    for (series, role, cores), vals in sorted(phases.items()):
        rows.append(
            {
                "series": labels[series],
                "role": role,
                "cores": cores,
                "cores_per_gpu": cores / max(gpus, 1),
                "wait": statistics.median(vals),
                "low": min(vals),
                "high": max(vals),
                "phases": len(vals),
            }
        )
    return rows
