"""Calibration points of the TTFT model: loading, validating, turning them into training data,
and fitting the model on them with its leave-one-out error.

Points come from every ``data/calibration/*.csv`` (the research's published figures in
``published.csv``, measured runs in ``h200-*.csv`` and others) and from the database's
``calibration`` table (where ``advisor bench collect`` stores bench points). All have exactly
the columns of that table (:data:`COLUMNS`), so published and measured points are fitted
together without conversion. A bad row is reported with its file, line and field and left out;
the other rows still load.

How points become training targets (the slowdown of TTFT against ample cores):

- ``speedup``: the value itself (TTFT at ``cores`` over TTFT at the best core count tested);
- ``ttft_ms``, ``ttft_p50_ms``, ``task_time_s``: divided by the smallest value of their series
  (same source kind, platform, engine and version, model, GPUs, workload, load and prompt
  tokens); a series needs two core counts or more;
- ``timeout``: censored at the model's ``max_slowdown`` (at least that slow);
- any other metric (``tokenize_share``, ``dequeue_ms``, ...) is context, kept but not fitted;
- points of a CPU-only platform (``CPU``: the launcher's tests without a GPU) are not fitted;
- every series (one experiment: a series of the metrics above, or a single speedup or timeout
  point) weighs 1 in total, split over its rows (:func:`series_weights`), so many short bench
  rows do not outweigh the research's points.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from advisor.errors import InputError, NotFoundError
from advisor.progress import ProgressFn, no_progress
from advisor.resources import shipped_data

COLUMNS: tuple[str, ...] = (
    "point_id", "source", "source_ref", "platform", "engine", "engine_version", "model",
    "model_params_b", "gpus", "workload", "load_rps", "prompt_tokens", "cores", "cores_per_gpu",
    "metric", "value", "unit", "measured_on", "notes",
)
CALIBRATION_DIR_ENV = "ADVISOR_CALIBRATION_DIR"
SERIES_METRICS = ("ttft_ms", "ttft_p50_ms", "task_time_s")
SPEEDUP_METRICS = ("speedup",)
CENSORED_METRICS = ("timeout",)
# Platforms whose points are kept but never fitted: CPU-only runs (the launcher's tests).
NOT_FITTED_PLATFORMS = ("CPU",)
_FLOATS = ("model_params_b", "load_rps", "cores_per_gpu", "value")
_INTS = ("gpus", "prompt_tokens", "cores")


@dataclass(frozen=True)
class CalibrationPoint:
    """One row of the ``calibration`` table, and where it was read (``file:line`` or ``db``)."""

    point_id: str
    source: str
    source_ref: str | None
    platform: str | None
    engine: str | None
    engine_version: str | None
    model: str | None
    model_params_b: float | None
    gpus: int | None
    workload: str | None
    load_rps: float | None
    prompt_tokens: int | None
    cores: int | None
    cores_per_gpu: float | None
    metric: str
    value: float | None
    unit: str | None
    measured_on: dt.date | None
    notes: str | None
    origin: str = ""

    @property
    def source_kind(self) -> str:
        """``paper``, ``bench`` or what precedes the colon of ``source``."""
        return self.source.split(":", 1)[0].strip().lower()


@dataclass(frozen=True)
class LoadedPoints:
    """Every valid point, and one message per row left out (file:line, field, why)."""

    points: tuple[CalibrationPoint, ...]
    problems: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


def default_calibration_dir() -> Path:
    """``$ADVISOR_CALIBRATION_DIR`` or the shipped ``data/calibration`` (advisor.resources)."""
    env = os.environ.get(CALIBRATION_DIR_ENV)
    if env:
        return Path(env)
    return shipped_data("calibration")


def _text(raw: object) -> str | None:
    if raw is None:
        return None
    s = str(raw).strip()
    return s or None


def parse_row(row: dict[str, Any], source: str, line: int | None) -> CalibrationPoint:
    """Validate one row (strings from a CSV, or typed values from the DB); raise InputError."""

    def bad(fieldname: str, why: str) -> InputError:
        return InputError(why, source=source, line=line, field=fieldname)

    values: dict[str, Any] = {}
    for name in COLUMNS:
        raw = row.get(name)
        text = _text(raw)
        if name in _FLOATS or name in _INTS:
            whole = name in _INTS
            if text is None:
                values[name] = None
                continue
            try:
                num = float(text)
            except ValueError:
                raise bad(name, f"{text!r} is not a {'whole ' if whole else ''}number") from None
            if not math.isfinite(num) or (whole and num != int(num)):
                raise bad(name, f"{text!r} is not a {'whole' if whole else 'finite'} number")
            values[name] = int(num) if whole else num
        elif name == "measured_on":
            if raw is None or isinstance(raw, dt.date):
                values[name] = raw
            elif text is None:
                values[name] = None
            else:
                try:
                    values[name] = dt.date.fromisoformat(text)
                except ValueError:
                    raise bad(name, f"{text!r} is not a date (YYYY-MM-DD)") from None
        else:
            values[name] = text
    for required in ("point_id", "source", "metric"):
        if values[required] is None:
            raise bad(required, "is empty; every point needs it")
    for positive in ("gpus", "cores", "cores_per_gpu", "model_params_b", "prompt_tokens"):
        v = values[positive]
        if v is not None and v <= 0:
            raise bad(positive, f"must be positive, got {v}")
    if values["load_rps"] is not None and values["load_rps"] < 0:
        raise bad("load_rps", f"must be >= 0, got {values['load_rps']}")
    cores, gpus, cpg = values["cores"], values["gpus"], values["cores_per_gpu"]
    if cpg is None and cores is not None and gpus:
        values["cores_per_gpu"] = cores / gpus
    elif cpg is not None and cores is not None and gpus and abs(cpg - cores / gpus) > 0.01 * cpg:
        raise bad("cores_per_gpu", f"{cpg} disagrees with cores/gpus = {cores}/{gpus}")
    metric = values["metric"]
    fitted = metric in SERIES_METRICS + SPEEDUP_METRICS + CENSORED_METRICS
    if fitted:
        if values["cores_per_gpu"] is None:
            raise bad("cores_per_gpu", f"a {metric} point needs cores_per_gpu (or cores and gpus)")
        if values["value"] is None or values["value"] <= 0:
            raise bad("value", f"a {metric} point needs a positive value")
    if values["platform"] is not None:
        from advisor.gputypes import canonical_gpu_type

        values["platform"] = canonical_gpu_type(values["platform"])
    origin = source if line is None else f"{source}:{line}"
    return CalibrationPoint(**values, origin=origin)


def read_csv(path: Path) -> tuple[list[CalibrationPoint], list[str]]:
    """Points of one CSV file and the problems of its rows; a bad header fails the whole file."""
    problems: list[str] = []
    points: list[CalibrationPoint] = []
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in COLUMNS if c not in header]
        extra = [c for c in header if c not in COLUMNS]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if extra:
                parts.append(f"unexpected {', '.join(extra)}")
            raise InputError(
                "header must have exactly the calibration table's columns ("
                + "; ".join(parts) + ")",
                source=str(path), line=1, field=(missing or extra)[0],
            )
        for row in reader:
            line = reader.line_num
            if None in row:
                problems.append(str(InputError(
                    f"{len(header) + len(row[None])} fields where the header has {len(header)}",
                    source=str(path), line=line)))
                continue
            try:
                points.append(parse_row(row, str(path), line))
            except InputError as exc:
                problems.append(str(exc))
    return points, problems


def read_db(db: str | os.PathLike[str]) -> tuple[list[CalibrationPoint], list[str]]:
    """Points stored in the database's ``calibration`` table (by ``advisor bench collect``)."""
    from advisor.store import connect, query

    con = connect(db, read_only=True)
    try:
        cur = con.execute(query("model/calibration_points"))
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
    finally:
        con.close()
    points, problems = [], []
    for r in rows:
        rec = dict(zip(names, r, strict=True))
        try:
            points.append(parse_row(rec, f"db calibration point {rec.get('point_id')}", None))
        except InputError as exc:
            problems.append(str(exc))
    return points, problems


def load_points(
    calibration_dir: str | os.PathLike[str] | None = None,
    db: str | os.PathLike[str] | None = None,
) -> LoadedPoints:
    """Every point of ``calibration_dir/*.csv`` plus, when ``db`` exists, the DB's table.

    A point_id seen twice keeps its first occurrence (files in name order, then the DB) and
    reports the second.
    """
    directory = Path(calibration_dir) if calibration_dir else default_calibration_dir()
    if not directory.is_dir():
        raise NotFoundError(f"{directory}: no calibration directory")
    all_points: list[CalibrationPoint] = []
    problems: list[str] = []
    sources: list[str] = []
    for path in sorted(directory.glob("*.csv")):
        pts, probs = read_csv(path)
        all_points.extend(pts)
        problems.extend(probs)
        sources.append(str(path))
    if db is not None and Path(db).exists():
        pts, probs = read_db(db)
        all_points.extend(pts)
        problems.extend(probs)
        sources.append(f"db:{db}")
    seen: dict[str, str] = {}
    unique: list[CalibrationPoint] = []
    for p in all_points:
        if p.point_id in seen:
            problems.append(f"{p.origin}, field point_id: {p.point_id!r} already read at "
                            f"{seen[p.point_id]}; this one is left out")
            continue
        seen[p.point_id] = p.origin
        unique.append(p)
    return LoadedPoints(tuple(unique), tuple(problems), tuple(sources))


@dataclass(frozen=True)
class TrainingSet:
    """Design matrix rows, slowdown targets and the point behind each row."""

    X: list[list[float]]
    y: list[float]
    points: tuple[CalibrationPoint, ...]
    censored: tuple[bool, ...]
    skipped: tuple[str, ...] = ()
    weights: tuple[float, ...] = ()  # the fit's sample weights (see :func:`series_weights`)


def _series_key(p: CalibrationPoint) -> tuple[Any, ...]:
    return (p.source_kind, p.platform, p.engine, p.engine_version, p.model, p.gpus, p.workload,
            p.load_rps, p.prompt_tokens, p.metric)


WEIGHTINGS = ("series", "repeat", "ratio", "none")


def series_weights(points: Sequence[CalibrationPoint], weighting: str = "series") -> list[float]:
    """The sample weight of each fitted point.

    A *series* is what one experiment measured: the rows of a ``ttft_ms`` / ``ttft_p50_ms`` /
    ``task_time_s`` series (normalised together, repeats included), or one ``speedup`` or
    ``timeout`` point (already a ratio of its own experiment).

    - ``series``: every series weighs 1 in total, split evenly over its rows; 24 short, noisy
      bench rows of four series then weigh 4, not 24, against the research's points;
    - ``repeat``: repeats of one core count share one unit (each measured condition weighs 1);
    - ``ratio``: a series of ``n`` core counts weighs ``n - 1`` (the ratios it measures),
      split evenly over its rows;
    - ``none``: every row weighs 1.
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    if weighting == "none":
        return [1.0] * len(points)

    def key(i: int, p: CalibrationPoint) -> tuple[Any, ...]:
        return _series_key(p) if p.metric in SERIES_METRICS else ("point", i)

    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, p in enumerate(points):
        groups[key(i, p)].append(i)
    out = [1.0] * len(points)
    for members in groups.values():
        cores = [points[i].cores_per_gpu for i in members]
        if weighting == "series":
            for i in members:
                out[i] = 1.0 / len(members)
        elif weighting == "ratio":
            total = max(len(set(cores)) - 1, 1)
            for i in members:
                out[i] = total / len(members)
        else:  # repeat
            for i, c in zip(members, cores, strict=True):
                out[i] = 1.0 / cores.count(c)
    return out


def training_set(points: Sequence[CalibrationPoint], max_slowdown: float,
                 weighting: str = "series") -> TrainingSet:
    """The points the model is fitted on, as slowdowns against ample cores (see the module doc)."""
    from advisor.slowdown import feature_row

    X: list[list[float]] = []
    y: list[float] = []
    used: list[CalibrationPoint] = []
    censored: list[bool] = []
    skipped: list[str] = []

    def add(p: CalibrationPoint, target: float, is_censored: bool) -> None:
        assert p.cores_per_gpu is not None
        X.append(feature_row(p.cores_per_gpu, gpus=p.gpus, model_params_b=p.model_params_b,
                             load_rps=p.load_rps, prompt_tokens=p.prompt_tokens,
                             platform=p.platform))
        y.append(target)
        used.append(p)
        censored.append(is_censored)

    series: dict[tuple[Any, ...], list[CalibrationPoint]] = defaultdict(list)
    for p in points:
        fitted_metric = p.metric in SPEEDUP_METRICS + CENSORED_METRICS + SERIES_METRICS
        if fitted_metric and (p.platform or "").upper() in NOT_FITTED_PLATFORMS:
            skipped.append(f"{p.origin}: platform {p.platform} is a CPU-only test run, not a GPU "
                           "serving measurement; not fitted")
            continue
        if p.metric in SPEEDUP_METRICS:
            assert p.value is not None
            add(p, max(p.value, 1.0), False)
        elif p.metric in CENSORED_METRICS:
            add(p, max_slowdown, True)
        elif p.metric in SERIES_METRICS:
            series[_series_key(p)].append(p)
    for members in series.values():
        if len({m.cores_per_gpu for m in members}) < 2:
            skipped.extend(f"{m.origin}: {m.metric} series with one core count cannot give a "
                           "slowdown; not fitted" for m in members)
            continue
        best = min(m.value for m in members if m.value is not None)
        for m in members:
            assert m.value is not None
            add(m, m.value / best, False)
    return TrainingSet(X, y, tuple(used), tuple(censored), tuple(skipped),
                       tuple(series_weights(used, weighting)))


@dataclass(frozen=True)
class FitConfig:
    """How to fit: where the points are, the estimator's settings, where to save the result."""

    calibration_dir: str | None = None
    db: str | None = None
    alpha: float = 1.0
    max_slowdown: float = 25.0
    censored_weight: float = 0.01
    pole_exponent: float = 2.0
    k_by: str = "platform"
    k_alpha: float = 0.1
    weighting: str = "series"
    n_bootstrap: int = 50
    interval: float = 0.9
    random_state: int = 0
    output: str | None = None


@dataclass(frozen=True)
class LooGroup:
    """Leave-one-out error of one group of points (by source kind and platform)."""

    source_kind: str
    platform: str
    points: int
    mape: float
    worst_point: str
    worst_ape: float


@dataclass(frozen=True)
class FitReport:
    """What ``advisor fit`` reports: data used, parameters, leave-one-out error, warnings."""

    points_loaded: int
    points_fitted: int
    points_censored: int
    points_context: int
    loo_mape: float | None  # leave-one-out MAPE on the published (paper) points
    loo_mape_bench: float | None
    loo_by_group: tuple[LooGroup, ...]
    demand_cores_per_gpu_at_reference: float
    k: float
    sigma_log: float
    platforms_seen: tuple[str, ...]
    gpus_seen: tuple[int, ...]
    warnings: tuple[str, ...]
    model_path: str | None
    sources: tuple[str, ...] = field(default=())
    k_offsets: dict[str, float] = field(default_factory=dict)  # log-k offsets, e.g. platform=H200
    weighting: str = "series"


def _loo(ts: TrainingSet, cfg: FitConfig, progress: ProgressFn) -> list[tuple[int, float]]:
    """(row index, absolute percentage error) of every uncensored row, refitting without it."""
    import numpy as np

    from advisor.model import CoreSlowdownRegressor

    X = np.asarray(ts.X)
    y = np.asarray(ts.y)
    w = np.asarray(ts.weights)
    rows = [i for i, c in enumerate(ts.censored) if not c]
    out = []
    for n, i in enumerate(rows):
        keep = np.arange(len(y)) != i
        est = CoreSlowdownRegressor(alpha=cfg.alpha, max_slowdown=cfg.max_slowdown,
                                    censored_weight=cfg.censored_weight,
                                    pole_exponent=cfg.pole_exponent, k_by=cfg.k_by, k_alpha=cfg.k_alpha,
                                    n_bootstrap=0)
        est.fit(X[keep], y[keep], sample_weight=w[keep])
        pred = float(est.predict(X[i : i + 1])[0])
        out.append((i, abs(pred - y[i]) / y[i]))
        progress("leave-one-out", n + 1, len(rows))
    return out


def fit_model(cfg: FitConfig, progress: ProgressFn = no_progress) -> FitReport:
    """Fit the model on every calibration point, measure its leave-one-out error, save it.

    Saves the fitted parameters as JSON to ``cfg.output`` when given (see
    :func:`advisor.slowdown.save_params`); ``advisor recommend`` reads them back.
    """
    import numpy as np

    from advisor.model import CoreSlowdownRegressor
    from advisor.slowdown import PLATFORMS, save_params

    loaded = load_points(cfg.calibration_dir, cfg.db)
    ts = training_set(loaded.points, cfg.max_slowdown, cfg.weighting)
    if len(ts.y) < 3:
        raise InputError(f"only {len(ts.y)} fittable calibration points; need at least 3",
                         source=str(cfg.calibration_dir or default_calibration_dir()))
    progress("fit", 0, 1)
    est = CoreSlowdownRegressor(alpha=cfg.alpha, max_slowdown=cfg.max_slowdown,
                                censored_weight=cfg.censored_weight,
                                pole_exponent=cfg.pole_exponent, k_by=cfg.k_by, k_alpha=cfg.k_alpha,
                                n_bootstrap=cfg.n_bootstrap, interval=cfg.interval,
                                random_state=cfg.random_state)
    est.fit(np.asarray(ts.X), np.asarray(ts.y), sample_weight=np.asarray(ts.weights))
    progress("fit", 1, 1)
    loo = _loo(ts, cfg, progress)

    groups: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    for i, ape in loo:
        p = ts.points[i]
        groups[(p.source_kind, p.platform or "unknown")].append((i, ape))
    by_group = []
    for (kind, platform), items in sorted(groups.items()):
        worst_i, worst = max(items, key=lambda t: t[1])
        by_group.append(LooGroup(kind, platform, len(items),
                                 float(np.mean([a for _, a in items])),
                                 ts.points[worst_i].point_id, worst))

    def mape_of(kind: str) -> float | None:
        apes = [a for i, a in loo if ts.points[i].source_kind == kind]
        return float(np.mean(apes)) if apes else None

    platforms_seen = tuple(sorted({p.platform for p in ts.points if p.platform}))
    gpus_seen = tuple(sorted({p.gpus for p in ts.points if p.gpus}))
    warnings = list(loaded.problems) + list(ts.skipped)
    unseen = [p for p in PLATFORMS if p not in platforms_seen]
    if unseen:
        warnings.append(
            "extrapolation: no calibration data for platform(s) " + ", ".join(unseen)
            + "; their predictions use the shared curve (the research reports that H100/H200 "
            "reproduce the Blackwell results)")
    if gpus_seen:
        warnings.append(
            "extrapolation: calibrated on " + ", ".join(str(g) for g in gpus_seen)
            + " GPUs only; other GPU counts extrapolate along log2(GPUs)")
    meta = {
        "fitted_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "platforms_seen": list(platforms_seen),
        "gpus_seen": list(gpus_seen),
        "points_fitted": len(ts.y),
        "loo_mape": mape_of("paper"),
        "sources": [Path(s).name if not s.startswith("db:") else "db" for s in loaded.sources],
        "settings": {"alpha": cfg.alpha, "censored_weight": cfg.censored_weight,
                     "pole_exponent": cfg.pole_exponent, "k_by": cfg.k_by, "k_alpha": cfg.k_alpha,
                     "weighting": cfg.weighting,
                     "n_bootstrap": cfg.n_bootstrap, "random_state": cfg.random_state},
    }
    params = est.to_params(meta)
    path = str(save_params(params, cfg.output)) if cfg.output else None
    demand = math.exp(params.theta[0]) if len(params.theta) else float("nan")
    return FitReport(
        points_loaded=len(loaded.points),
        points_fitted=len(ts.y),
        points_censored=sum(ts.censored),
        points_context=len(loaded.points) - len(ts.points) - len(ts.skipped),
        loo_mape=mape_of("paper"),
        loo_mape_bench=mape_of("bench"),
        loo_by_group=tuple(by_group),
        demand_cores_per_gpu_at_reference=demand,
        k=math.exp(params.log_k),
        sigma_log=params.sigma_log,
        platforms_seen=platforms_seen,
        gpus_seen=gpus_seen,
        warnings=tuple(warnings),
        model_path=path,
        sources=loaded.sources,
        k_offsets=params.k_offsets(),
        weighting=cfg.weighting,
    )


def point_rows(loaded: LoadedPoints) -> list[dict[str, Any]]:
    """The points as plain rows (the columns of the table, plus where each was read)."""
    names = [f.name for f in fields(CalibrationPoint)]
    return [{n: getattr(p, n) for n in names} for p in loaded.points]
