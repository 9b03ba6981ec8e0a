"""``advisor fit``: fit the capacity model on the calibration points, judge it, save it as JSON.

One call (:func:`fit_model`) does, in order:

1. load every point and the frozen test split (:mod:`advisor.model.calibration.split`);
2. validate on the training series, leaving one out at a time (curve error and decisions
   against the baselines, :mod:`advisor.model.calibration.validation`);
3. choose the utilisation target on every training series with a resolved knee, and decide
   whether the model's decisions beat 2 + N's (if not, ``recommend`` answers 2 + N and says
   why);
4. score the test series once (the model fitted on the training series only);
5. fit the shipped parameters on every series (training and test) with a series bootstrap,
   and save them with the target, the decision basis, the families measured and the series.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.model.calibration.curvefit import fit_curve_with
from advisor.model.calibration.decisions import (
    choose_utilisation,
    floor_cores,
    series_demand,
)
from advisor.model.calibration.points import (
    CalibrationPoint,
    default_calibration_dir,
    load_points,
)
from advisor.model.calibration.split import load_split
from advisor.model.calibration.training import TrainingSet, training_set
from advisor.model.calibration.validation import SeriesScore, score_split, validate
from advisor.progress import ProgressFn, no_progress


@dataclass(frozen=True)
class FitConfig:
    """How to fit: where the points are, the fit's settings, where to save the result."""

    calibration_dir: str | None = None
    db: str | None = None
    alpha: float = 0.1
    max_slowdown: float = 25.0
    censored_weight: float = 0.01
    pole_exponent: float = 1.0
    weighting: str = "series"
    n_bootstrap: int = 50
    interval: float = 0.9
    random_state: int = 0
    tolerance: float = 0.10  # of the measured knees: within this of the most cores
    cpu_weight: float = 0.5  # of each measured process's CPU, per series (kept for the rows)
    output: str | None = None


@dataclass(frozen=True)
class FitReport:
    """What ``advisor fit`` reports: data used, parameters, validation, test, warnings."""

    points_loaded: int
    points_fitted: int
    points_censored: int
    points_context: int
    cpu_points_fitted: int
    series_fitted: int
    parameters: dict[str, float]
    sigma_log: float
    validation: dict[str, Any]
    by_series: tuple[SeriesScore, ...]
    platforms_seen: tuple[str, ...]
    gpus_seen: tuple[int, ...]
    warnings: tuple[str, ...]
    model_path: str | None
    sources: tuple[str, ...] = field(default=())
    weighting: str = "series"
    demand: dict[str, Any] = field(default_factory=dict)
    capacity: dict[str, Any] = field(default_factory=dict)
    test: dict[str, Any] = field(default_factory=dict)
    test_by_series: tuple[SeriesScore, ...] = ()
    split: dict[str, Any] = field(default_factory=dict)


def decision_basis(decision: dict[str, Any]) -> tuple[str, str]:
    """("capacity model" or "2 + N", the sentence why) from the held-out decision table."""
    from advisor.model.calibration.decisions import better

    model, rule = decision.get("model"), decision.get("2 + N")
    n = decision.get("series", 0)
    if not n or model is None or rule is None:
        return (
            "2 + N",
            "no training series resolves its knee, so nothing shows the capacity model "
            "deciding better than vLLM's 2 + N rule",
        )
    counts = (
        f"within one core of the measured knee on {model['within one core']} of {n} held-out "
        f"series (2 + N: {rule['within one core']}; below it {model['below']} against "
        f"{rule['below']})"
    )
    if better(model, rule):
        extra = model["within one core"] - rule["within one core"]
        fewer = rule["below"] - model["below"]
        return (
            "capacity model",
            f"the capacity model is {counts}: {extra} more within one core"
            + (f" and {fewer} fewer below" if fewer > 0 else ""),
        )
    return (
        "2 + N",
        f"the capacity model is {counts}: it does not decide better than 2 + N, so the answer "
        "is 2 + N unless the measured demand alone needs more cores",
    )


def _demand_of(values: Any) -> Any:
    """A series' API-server and engine-core demand as the fitted demand model predicts it for
    its configuration: the wait model is fitted on the demand ``recommend`` will give it, so
    its held-out scores are those of the whole chain (fitted on each series' own measured
    demand, the engine core's held-out error was 0.028 against 0.021, the knee 0.14 cores off
    against 0)."""
    from advisor.model.demand import demand_of
    from advisor.model.slowdown import N_DEMAND

    def demand(c: Any, gpu_busy: float = 1.0) -> dict[str, float]:
        d = demand_of(
            values[:N_DEMAND],
            load_rps=c.load_rps or 0.0,
            prompt_tokens=c.prompt_tokens or 0,
            gpus=c.gpus,
            tp=c.tp,
            executor=c.executor,
            renderer_workers=c.renderer_workers,
            gpu_busy=gpu_busy,
        )
        return {"api_server": d.api_server_cores, "engine_core": d.engine_core_cores}

    return demand


def _knee_curve_of(values: Any, cfg: FitConfig) -> Any:
    """A series' knee by the 2-parameter TTFT knee curve fitted on every series (the held-out
    wait knee is scored beside it; the curve has seen the series it is scored on)."""
    from advisor.model.load import Workload, features_of
    from advisor.model.slowdown import CurveParams, knee_total_cores

    params = CurveParams(
        values=values, max_slowdown=cfg.max_slowdown, pole_exponent=cfg.pole_exponent
    )

    def knee(c: Any) -> int | None:
        w = Workload(
            load_rps=c.load_rps,
            prompt_tokens=c.prompt_tokens,
            workload=c.workload,
            executor=c.executor,
            renderer_workers=c.renderer_workers,
        )
        f = features_of(c.platform, c.gpus, w, c.tp)
        return knee_total_cores(params, f.template, 0.10, max_total=64 * c.gpus)

    return knee


def _capacity(
    ts: TrainingSet, train: list[str], cfg: FitConfig, table: dict[str, Any]
) -> dict[str, Any]:
    """The capacity answer's settings: the utilisation target chosen on the training series'
    resolved knees (a fit on the training series alone), and whether the capacity model or
    2 + N decides."""
    from advisor.model.slowdown import N_DEMAND

    train_fit = fit_curve_with(ts, train, cfg)
    knees = [ts.series_info[s] for s in train if ts.series_info[s].resolved]
    choice = choose_utilisation(
        [
            (
                series_demand(i, train_fit.values[:N_DEMAND]),
                floor_cores(i.gpus),
                int(i.knee_cores or 0),
            )
            for i in knees
        ]
    )
    basis, reason = decision_basis(table.get("decision", {}))
    return {
        "utilisation_target": choice.utilisation_target,
        "utilisation_chosen_on": choice.chosen_on,
        "utilisation_tied": list(choice.tied),
        "decision_basis": basis,
        "decision_reason": reason,
        "decision": {k: v for k, v in table.get("decision", {}).items() if k != "by_series"},
    }


def _fit_warnings(platforms_seen: tuple[str, ...], table: dict[str, Any]) -> list[str]:
    """What a fit's reader must know: GPU types extrapolated, baselines the model does not beat
    on held-out series."""
    from advisor.model.slowdown import PLATFORMS

    warnings = []
    unseen = [p for p in PLATFORMS if p not in platforms_seen]
    if unseen:
        warnings.append(
            "extrapolation: no calibration data for platform(s) "
            + ", ".join(unseen)
            + "; the demand does not depend on the GPU type, the TTFT scale uses the relative "
            "GPU speed of their datasheets"
        )
    beaten = [b for b, e in table["baselines"].items() if not table["model"] < e]
    if beaten:
        warnings.append(
            "on held-out series the model's curve error does not beat: "
            + ", ".join(
                f"{b} ({table['baselines'][b]:.3f} against the model's {table['model']:.3f})"
                for b in beaten
            )
        )
    return warnings


def _wait_and_link(
    points: Sequence[CalibrationPoint], values: Any, cfg: FitConfig
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The wait model (advisor.model.waitmodel; None where no run recorded its processes' wait)
    on the demand the fitted curve ``values`` gives, and a job's CPU pressure against that wait
    (advisor.model.psilink: what --starved-psi reads), as the model file stores them."""
    from advisor.model.calibration.waits import fit_wait_points, link_cells
    from advisor.model.psilink import fit_links, links_to_json

    wait_fit = fit_wait_points(
        points,
        seed=cfg.random_state,
        baseline=_knee_curve_of(values, cfg),
        demand_of=_demand_of(values),
    )
    wait = wait_fit.to_json_dict() if wait_fit is not None else None
    return wait, links_to_json(fit_links(link_cells(points), seed=cfg.random_state))


def fit_model(cfg: FitConfig, progress: ProgressFn = no_progress) -> FitReport:
    """Fit, validate, test and save (see the module docstring)."""
    from advisor.model.slowdown import N_DEMAND, PARAM_NAMES, CurveParams, save_params

    directory = Path(cfg.calibration_dir) if cfg.calibration_dir else default_calibration_dir()
    loaded = load_points(directory, cfg.db)
    split = load_split(directory)
    ts = training_set(
        loaded.points,
        cfg.max_slowdown,
        cfg.weighting,
        cfg.cpu_weight,
        split=split,
        tolerance=cfg.tolerance,
    )
    if len(ts.y) < 3:
        raise InputError(
            f"only {len(ts.y)} fittable calibration points; need at least 3",
            source=str(directory),
        )
    table, scores, sigma = validate(ts, cfg, progress)
    test_table, test_scores = score_split(ts, cfg)

    train = ts.training_series()
    capacity = _capacity(ts, train, cfg, table)
    progress("fit", 0, 1)
    final = fit_curve_with(
        ts, list(ts.series_info), cfg, n_bootstrap=cfg.n_bootstrap, seed=cfg.random_state
    )
    progress("fit", 1, 1)

    wait, psi_link = _wait_and_link(loaded.points, final.values, cfg)
    platforms_seen = tuple(sorted({p.platform for p in ts.points if p.platform}))
    gpus_seen = tuple(sorted({p.gpus for p in ts.points if p.gpus}))
    warnings = [*loaded.problems, *ts.skipped, *_fit_warnings(platforms_seen, table)]
    interval = final.demand.interval(cfg.interval)
    demand = {
        name: {
            "value": final.demand.values[i],
            "interval": list(interval[name]),
            "source": final.demand.sources[i],
        }
        for i, name in enumerate(PARAM_NAMES[:N_DEMAND])
    }
    families: dict[str, list[str]] = {}
    for s, info in ts.series_info.items():
        families.setdefault(info.config.family, []).append(s)
    split_info = {
        "rules": split.describe(),
        "file": Path(split.source).name if split.source else None,
        "training_series": len(train),
        "test_series": len(ts.test_series()),
    }
    meta = {
        "fitted_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "platforms_seen": list(platforms_seen),
        "gpus_seen": list(gpus_seen),
        "points_fitted": len(ts.y),
        "cpu_points_fitted": len(ts.cpu_y),
        "validation": table,
        "test": test_table,
        "split": split_info,
        "loo_mape": table["mape"],  # held-out by series (the dashboard's "±N%")
        "tolerance": cfg.tolerance,
        "capacity": capacity,
        "demand": demand,
        "families": families,
        "series": [i.as_evidence() for i in ts.series_info.values()],
        "wait": wait,
        "psi_link": psi_link,
        "sources": [Path(s).name if not s.startswith("db:") else "db" for s in loaded.sources],
        "settings": {
            "alpha": cfg.alpha,
            "censored_weight": cfg.censored_weight,
            "pole_exponent": cfg.pole_exponent,
            "weighting": cfg.weighting,
            "n_bootstrap": cfg.n_bootstrap,
            "random_state": cfg.random_state,
        },
    }
    params = CurveParams(
        values=final.values,
        max_slowdown=cfg.max_slowdown,
        sigma_log=sigma,
        interval=cfg.interval,
        pole_exponent=cfg.pole_exponent,
        bootstrap_values=final.bootstrap_values,
        meta=meta,
    )
    path = str(save_params(params, cfg.output)) if cfg.output else None
    return FitReport(
        points_loaded=len(loaded.points),
        points_fitted=len(ts.y),
        points_censored=sum(ts.censored),
        points_context=len(loaded.points) - len(ts.points) - len(ts.skipped) - len(ts.cpu_y),
        cpu_points_fitted=len(ts.cpu_y),
        series_fitted=len(ts.series_info),
        parameters=params.named(),
        sigma_log=sigma,
        validation=table,
        by_series=scores,
        platforms_seen=platforms_seen,
        gpus_seen=gpus_seen,
        warnings=tuple(warnings),
        model_path=path,
        sources=loaded.sources,
        weighting=cfg.weighting,
        demand=demand,
        capacity=capacity,
        test=test_table,
        test_by_series=test_scores,
        split=split_info,
    )
