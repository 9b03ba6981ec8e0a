"""Calibration points of the TTFT model: loading, validating, turning them into training data,
fitting the model on them, and its validation by held-out series.

Points come from every ``data/calibration/*.csv`` (the research's published figures in
``published.csv``, measured runs in ``h200-*.csv`` and others) and from the database's
``calibration`` table (where ``advisor bench collect`` stores bench points). All have exactly
the columns of that table (:data:`COLUMNS`), so published and measured points are fitted
together without conversion. A bad row is reported with its file, line and field and left out;
the other rows still load.

How points become training targets (see docs/model.md):

- a series (one configuration: source kind, platform, engine and version, model, GPUs,
  workload, load and prompt tokens) of ``ttft_ms``, ``ttft_p50_ms`` or ``task_time_s`` at two
  core counts or more: each value over the geometric mean of its repeats at the series'
  largest core count (the reference the prediction is made against);
- ``speedup``: the value itself, against 8 cores per GPU (the research's best count);
- ``timeout``: censored at the model's ``max_slowdown`` (at least that slow);
- ``cpu_api_server_cores``, ``cpu_engine_core_cores``, ``cpu_worker_cores`` at a series'
  largest core count: targets of the CPU demand's parts; ``prefix_hit_rate``: the series'
  prefix-hit input;
- any other metric (``tokenize_share``, ``dequeue_ms``, ...) is context, kept but not fitted;
- points of a CPU-only platform (``CPU``: the launcher's tests without a GPU) are not fitted;
- every series weighs 1 in total, split over its rows (:func:`series_weights`).

:func:`validate` holds out one whole series at a time and compares the model's error on it
with three baselines; :func:`fit_model` fits, validates and saves.
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
    "point_id",
    "source",
    "source_ref",
    "platform",
    "engine",
    "engine_version",
    "model",
    "model_params_b",
    "gpus",
    "workload",
    "load_rps",
    "prompt_tokens",
    "cores",
    "cores_per_gpu",
    "metric",
    "value",
    "unit",
    "measured_on",
    "notes",
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
                + "; ".join(parts)
                + ")",
                source=str(path),
                line=1,
                field=(missing or extra)[0],
            )
        for row in reader:
            line = reader.line_num
            if None in row:
                problems.append(
                    str(
                        InputError(
                            f"{len(header) + len(row[None])} fields where the header has {len(header)}",
                            source=str(path),
                            line=line,
                        )
                    )
                )
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
            problems.append(
                f"{p.origin}, field point_id: {p.point_id!r} already read at "
                f"{seen[p.point_id]}; this one is left out"
            )
            continue
        seen[p.point_id] = p.origin
        unique.append(p)
    return LoadedPoints(tuple(unique), tuple(problems), tuple(sources))


@dataclass(frozen=True)
class SeriesInfo:
    """One measured configuration (a series): what it is and what it measured.

    ``slowdowns`` are the geometric means over repeats at each core count, against the
    series' reference (its largest core count; a published speedup: 8 cores per GPU).
    """

    series_id: str
    source_kind: str
    platform: str | None
    engine_version: str | None
    model_params_b: float | None
    gpus: int | None
    workload: str | None
    load_rps: float | None
    prompt_tokens: int | None
    prefix_hit: float
    ref_cores: float | None
    cores: tuple[float, ...]  # total cores measured (ascending)
    slowdowns: tuple[float, ...]
    censored: bool = False

    def measured_knee(self, tolerance: float) -> float | None:
        """Fewest total cores from which on the measured slowdowns are within ``tolerance`` of
        the reference on average (geometric mean of that count and every larger one) and each
        within twice it (so one noisy count above the knee does not move it); None for a series
        of fewer than three core counts."""
        if len(self.cores) < 3 or self.censored:
            return None
        limit = math.log1p(tolerance)
        knee = self.cores[-1]
        logs = [math.log(s) for s in self.slowdowns]
        for i in range(len(self.cores) - 1, -1, -1):
            tail = logs[i:]
            if logs[i] > math.log1p(2 * tolerance) or sum(tail) / len(tail) > limit:
                break
            knee = self.cores[i]
        return knee

    def as_evidence(self, tolerance: float) -> dict[str, Any]:
        return {
            "series": self.series_id,
            "source_kind": self.source_kind,
            "platform": self.platform,
            "engine_version": self.engine_version,
            "model_params_b": self.model_params_b,
            "gpus": self.gpus,
            "workload": self.workload,
            "load_rps": self.load_rps,
            "prompt_tokens": self.prompt_tokens,
            "prefix_hit": round(self.prefix_hit, 3),
            "cores": list(self.cores),
            "slowdowns": [round(s, 3) for s in self.slowdowns],
            "measured_knee_cores": self.measured_knee(tolerance),
        }


@dataclass(frozen=True)
class TrainingSet:
    """Design matrix rows, targets and the point behind each row.

    ``X``/``y``: slowdown rows (against each row's reference cores); ``cpu_*``: the measured
    CPU cores of a process (API server, engine core, GPU worker) at a series' largest core
    count, which pin the demand's parts. ``series``/``cpu_series`` label each row's series.
    """

    X: list[list[float]]
    y: list[float]
    points: tuple[CalibrationPoint, ...]
    censored: tuple[bool, ...]
    skipped: tuple[str, ...] = ()
    weights: tuple[float, ...] = ()  # the fit's sample weights (see :func:`series_weights`)
    series: tuple[str, ...] = ()
    cpu_X: list[list[float]] = field(default_factory=list)
    cpu_y: list[float] = field(default_factory=list)
    cpu_points: tuple[CalibrationPoint, ...] = ()
    cpu_weights: tuple[float, ...] = ()
    cpu_series: tuple[str, ...] = ()
    series_info: dict[str, SeriesInfo] = field(default_factory=dict)

    def arrays(self) -> tuple[Any, Any, Any, Any]:
        """(X, y, weights, series labels) of slowdown and CPU rows together, for the fit."""
        import numpy as np

        from advisor.slowdown import FEATURES

        X = np.asarray(self.X + self.cpu_X, dtype=float).reshape(-1, len(FEATURES))
        y = np.asarray(self.y + self.cpu_y, dtype=float)
        w = np.asarray(self.weights + self.cpu_weights, dtype=float)
        return X, y, w, np.asarray(self.series + self.cpu_series)


def _series_key(p: CalibrationPoint) -> tuple[Any, ...]:
    return (
        p.source_kind,
        p.platform,
        p.engine,
        p.engine_version,
        p.model,
        p.gpus,
        p.workload,
        p.load_rps,
        p.prompt_tokens,
        p.metric,
    )


def _config_key(p: CalibrationPoint) -> tuple[Any, ...]:
    """The configuration a point measured (its series, whatever the metric)."""
    return _series_key(p)[:-1]


def _series_id(p: CalibrationPoint) -> str:
    if p.metric in SPEEDUP_METRICS + CENSORED_METRICS:
        return p.point_id
    parts = [
        p.source_kind,
        p.platform or "?",
        p.engine_version or "?",
        p.model or "?",
        f"{p.gpus or '?'}gpu",
        p.workload or "?",
        f"{p.load_rps if p.load_rps is not None else '?'}rps",
        f"{p.prompt_tokens or '?'}tok",
    ]
    return "|".join(str(x) for x in parts)


WEIGHTINGS = ("series", "repeat", "ratio", "none")
CPU_METRICS = {
    "cpu_api_server_cores": "api_server_cores",
    "cpu_engine_core_cores": "engine_core_cores",
    "cpu_worker_cores": "worker_cores",
}
PREFIX_HIT_METRIC = "prefix_hit_rate"
SPEEDUP_REF_CORES_PER_GPU = 8.0  # the research's best core count: "up to 8 x #GPUs"


def series_weights(points: Sequence[CalibrationPoint], weighting: str = "series") -> list[float]:
    """The sample weight of each fitted point.

    A *series* is what one experiment measured: the rows of a ``ttft_ms`` / ``ttft_p50_ms`` /
    ``task_time_s`` series (normalised together, repeats included), or one ``speedup`` or
    ``timeout`` point (already a ratio of its own experiment).

    - ``series``: every series weighs 1 in total, split evenly over its rows;
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


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def training_set(
    points: Sequence[CalibrationPoint],
    max_slowdown: float,
    weighting: str = "series",
    cpu_weight: float = 0.5,
) -> TrainingSet:
    """The points the model is fitted on (see the module doc); each measured process's CPU
    (API server, engine core, worker) of a series weighs ``cpu_weight`` in total."""
    from advisor.slowdown import feature_row, prefix_hit_of, renderer_workers_of

    hits: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for p in points:
        if p.metric == PREFIX_HIT_METRIC and p.value is not None:
            hits[_config_key(p)].append(p.value)

    def hit_of(p: CalibrationPoint) -> float:
        measured = hits.get(_config_key(p))
        if measured:
            return sum(measured) / len(measured)
        return prefix_hit_of(p.workload)

    def row(p: CalibrationPoint, ref: float | None, target: str = "slowdown") -> list[float]:
        assert p.cores_per_gpu is not None
        return feature_row(
            p.cores_per_gpu,
            gpus=p.gpus,
            model_params_b=p.model_params_b,
            load_rps=p.load_rps,
            prompt_tokens=p.prompt_tokens,
            platform=p.platform,
            prefix_hit=hit_of(p),
            ref_cores_per_gpu=ref,
            renderer_workers=renderer_workers_of(p.workload),
            target=target,
        )

    X: list[list[float]] = []
    y: list[float] = []
    used: list[CalibrationPoint] = []
    censored: list[bool] = []
    labels: list[str] = []
    skipped: list[str] = []
    info: dict[str, SeriesInfo] = {}

    def add(p: CalibrationPoint, target: float, is_censored: bool, ref: float | None) -> None:
        X.append(row(p, ref))
        y.append(target)
        used.append(p)
        censored.append(is_censored)
        labels.append(_series_id(p))

    def describe(
        p: CalibrationPoint,
        ref: float | None,
        by_cores: dict[float, list[float]],
        is_censored: bool = False,
    ) -> None:
        g = p.gpus or 1
        cores = sorted(by_cores)
        info[_series_id(p)] = SeriesInfo(
            _series_id(p),
            p.source_kind,
            p.platform,
            p.engine_version,
            p.model_params_b,
            p.gpus,
            p.workload,
            p.load_rps,
            p.prompt_tokens,
            hit_of(p),
            None if ref is None else ref * g,
            tuple(c * g for c in cores),
            tuple(_geomean(by_cores[c]) for c in cores),
            is_censored,
        )

    def not_fitted(p: CalibrationPoint) -> bool:
        if (p.platform or "").upper() in NOT_FITTED_PLATFORMS:
            skipped.append(
                f"{p.origin}: platform {p.platform} is a CPU-only test run, not a GPU "
                "serving measurement; not fitted"
            )
            return True
        return False

    series: dict[tuple[Any, ...], list[CalibrationPoint]] = defaultdict(list)
    cpu: dict[tuple[Any, ...], list[CalibrationPoint]] = defaultdict(list)
    for p in points:
        if p.metric in SPEEDUP_METRICS:
            if not_fitted(p):
                continue
            assert p.value is not None
            add(p, p.value, False, SPEEDUP_REF_CORES_PER_GPU)
            describe(
                p,
                SPEEDUP_REF_CORES_PER_GPU,
                {p.cores_per_gpu or 0.0: [p.value], SPEEDUP_REF_CORES_PER_GPU: [1.0]},
            )
        elif p.metric in CENSORED_METRICS:
            if not_fitted(p):
                continue
            add(p, max_slowdown, True, None)
            describe(p, None, {p.cores_per_gpu or 0.0: [max_slowdown]}, True)
        elif p.metric in SERIES_METRICS:
            if not not_fitted(p):
                series[_series_key(p)].append(p)
        elif (
            p.metric in CPU_METRICS
            and p.value is not None
            and p.value > 0
            and (p.platform or "").upper() not in NOT_FITTED_PLATFORMS
        ):
            cpu[_config_key(p)].append(p)
    refs: dict[tuple[Any, ...], float] = {}
    for members in series.values():
        if len({m.cores_per_gpu for m in members}) < 2:
            skipped.extend(
                f"{m.origin}: {m.metric} series with one core count cannot give a "
                "slowdown; not fitted"
                for m in members
            )
            continue
        ref = max(m.cores_per_gpu or 0.0 for m in members)
        base = _geomean([m.value for m in members if m.cores_per_gpu == ref and m.value])
        by_cores: dict[float, list[float]] = defaultdict(list)
        for m in members:
            assert m.value is not None and m.cores_per_gpu is not None
            add(m, m.value / base, False, ref)
            by_cores[m.cores_per_gpu].append(m.value / base)
        describe(members[0], ref, by_cores)
        refs[_config_key(members[0])] = ref
    weights = series_weights(used, weighting)

    cpu_X: list[list[float]] = []
    cpu_y: list[float] = []
    cpu_used: list[CalibrationPoint] = []
    cpu_w: list[float] = []
    cpu_labels: list[str] = []
    for key, members in cpu.items():
        top = refs.get(key, max(m.cores_per_gpu or 0.0 for m in members))
        # Only where cores are ample (the series' largest count) is a process's CPU its demand.
        kept = [
            m
            for m in members
            if m.cores_per_gpu == top and not (m.metric == "cpu_worker_cores" and (m.gpus or 1) < 2)
        ]
        per_kind: dict[str, int] = defaultdict(int)
        for m in kept:
            per_kind[m.metric] += 1
        for m in kept:
            assert m.value is not None
            cpu_X.append(row(m, None, CPU_METRICS[m.metric]))
            cpu_y.append(m.value)
            cpu_used.append(m)
            cpu_w.append(cpu_weight / per_kind[m.metric])
            cpu_labels.append(_series_id(m))
    return TrainingSet(
        X,
        y,
        tuple(used),
        tuple(censored),
        tuple(skipped),
        tuple(weights),
        tuple(labels),
        cpu_X,
        cpu_y,
        tuple(cpu_used),
        tuple(cpu_w),
        tuple(cpu_labels),
        info,
    )


@dataclass(frozen=True)
class FitConfig:
    """How to fit: where the points are, the estimator's settings, where to save the result."""

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
    tolerance: float = 0.10  # of the decision score: a knee is within this of ample cores
    cpu_weight: float = 0.5  # of each measured process's CPU, per series (a series weighs 1)
    output: str | None = None


BASELINES = ("always 1.0", "mean of similar points", "2 + N rule")
VALIDATION_SCHEME = "leave one series out"
VALIDATION_METRIC = (
    "mean absolute log error of the slowdown, averaged over the rows of each "
    "held-out series, then over series (lower is better)"
)


@dataclass(frozen=True)
class SeriesScore:
    """The held-out error of one series, for the model and each baseline, and the decision."""

    series: str
    rows: int
    model: float
    baselines: dict[str, float]
    measured_knee_cores: float | None = None
    recommended_cores: int | None = None
    rule_cores: int | None = None  # 2 + N


@dataclass(frozen=True)
class FitReport:
    """What ``advisor fit`` reports: data used, parameters, held-out validation, warnings."""

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


def _estimator(cfg: FitConfig, n_bootstrap: int) -> Any:
    from advisor.estimator import CoreSlowdownRegressor

    return CoreSlowdownRegressor(
        alpha=cfg.alpha,
        max_slowdown=cfg.max_slowdown,
        censored_weight=cfg.censored_weight,
        pole_exponent=cfg.pole_exponent,
        n_bootstrap=n_bootstrap,
        interval=cfg.interval,
        random_state=cfg.random_state,
    )


def validate(
    ts: TrainingSet, cfg: FitConfig, progress: ProgressFn = no_progress
) -> tuple[dict[str, Any], tuple[SeriesScore, ...], float]:
    """Leave one series out: refit without it, score its rows, against the baselines.

    Scored rows: the uncensored slowdown rows of the held-out series other than its reference
    rows (which are 1 by construction). A pathological prediction scores as ``max_slowdown``.
    Baselines, fitted on the same training rows: ``always 1.0``; ``mean of similar points``
    (geometric mean of the training slowdowns with the same GPU count and platform, else the
    same GPU count, else all); ``2 + N rule`` (below 2 + N total cores the training rows'
    geometric mean below their own 2 + N, at or above it their mean there).
    Returns the ``validation`` table, the per-series scores and the held-out residual spread.
    """
    import numpy as np

    from advisor import slowdown

    X, y, w, labels = ts.arrays()
    n_slow = len(ts.y)
    cols = slowdown._columns(X)
    cores_total = cols["cores"]
    gpus = cols["gpus"]
    ref_total = cols["ref"]
    is_ref = np.isclose(cores_total, ref_total)
    censored = np.zeros(len(y), dtype=bool)
    censored[:n_slow] = ts.censored
    slow = np.zeros(len(y), dtype=bool)
    slow[:n_slow] = True
    scorable = slow & ~censored & ~is_ref & (y > 0)
    log_y = np.log(np.where(y > 0, y, 1.0))
    platforms = np.array([p.platform or "?" for p in ts.points] + ["?"] * len(ts.cpu_y))
    floor = 2.0 + gpus
    held = [s for s in dict.fromkeys(ts.series) if np.any(scorable & (labels == s))]
    scores: list[SeriesScore] = []
    resid_sq: list[float] = []
    ape: list[float] = []
    for n, s in enumerate(held):
        test = labels == s
        train = ~test
        est = _estimator(cfg, 0).fit(X[train], y[train], sample_weight=w[train])
        rows = np.flatnonzero(test & scorable)
        m = slowdown.mechanism(est.values_, X[rows], cfg.pole_exponent)
        pred = np.where(m.pathological, cfg.max_slowdown, np.minimum(m.slowdown, cfg.max_slowdown))
        err_model = np.abs(np.log(pred) - log_y[rows])
        ape.append(float(np.mean(np.abs(pred / y[rows] - 1.0))))
        resid_sq.extend((np.log(pred) - log_y[rows]) ** 2)
        pool = train & scorable
        base: dict[str, float] = {"always 1.0": float(np.mean(np.abs(log_y[rows])))}
        sim = []
        for i in rows:
            pick = pool & (gpus == gpus[i]) & (platforms == platforms[i])
            if not pick.any():
                pick = pool & (gpus == gpus[i])
            if not pick.any():
                pick = pool
            sim.append(abs(float(np.mean(log_y[pick])) - log_y[i]) if pick.any() else abs(log_y[i]))
        base["mean of similar points"] = float(np.mean(sim))
        below_pool = pool & (cores_total < floor)
        above_pool = pool & (cores_total >= floor)
        lb = float(np.mean(log_y[below_pool])) if below_pool.any() else 0.0
        la = float(np.mean(log_y[above_pool])) if above_pool.any() else 0.0
        rule = np.where(cores_total[rows] < floor[rows], lb, la)
        base["2 + N rule"] = float(np.mean(np.abs(rule - log_y[rows])))
        info = ts.series_info.get(s)
        knee = info.measured_knee(cfg.tolerance) if info else None
        rec = rule_c = None
        if knee is not None and info is not None:
            # recommend's own rule, with the other series as its evidence
            from advisor.recommend import Workload, sufficient_cores

            others = [i.as_evidence(cfg.tolerance) for k, i in ts.series_info.items() if k != s]
            params = slowdown.CurveParams(
                values=tuple(est.values_), pole_exponent=cfg.pole_exponent, meta={"series": others}
            )
            g = int(gpus[rows[0]])
            work = Workload(
                info.model_params_b,
                info.load_rps,
                info.prompt_tokens,
                info.prefix_hit,
                None,
                None,
                info.engine_version,
            )
            most = int(max(info.cores) * 4)
            suff = sufficient_cores(
                params,
                gpus=g,
                platform=info.platform,
                workload=work,
                tolerance=cfg.tolerance,
                cap=max(most // g, 1),
            )
            rule_c = int(floor[rows[0]])
            rec = suff.cpus_per_gpu * g
        scores.append(SeriesScore(s, len(rows), float(np.mean(err_model)), base, knee, rec, rule_c))
        progress("leave one series out", n + 1, len(held))
    model_err = float(np.mean([sc.model for sc in scores])) if scores else float("nan")
    table: dict[str, Any] = {
        "scheme": VALIDATION_SCHEME,
        "metric": VALIDATION_METRIC,
        "series": len(scores),
        "rows": int(sum(sc.rows for sc in scores)),
        "model": model_err,
        "baselines": {
            b: float(np.mean([sc.baselines[b] for sc in scores])) if scores else float("nan")
            for b in BASELINES
        },
        # the same held-out predictions as a percentage error, for a person ("±39%")
        "mape": float(np.mean(ape)) if ape else float("nan"),
        "points": int(sum(sc.rows for sc in scores)),
        "method": VALIDATION_SCHEME,
    }
    decided = [sc for sc in scores if sc.measured_knee_cores is not None]
    if decided:

        def decision(cores: list[int]) -> dict[str, Any]:
            off = [
                c - sc.measured_knee_cores
                for c, sc in zip(cores, decided, strict=True)
                if sc.measured_knee_cores is not None
            ]
            return {
                "at_or_above_knee": sum(o >= 0 for o in off) / len(off),
                "mean_cores_above_knee": float(np.mean([max(o, 0.0) for o in off])),
                "mean_cores_below_knee": float(np.mean([max(-o, 0.0) for o in off])),
            }

        table["decision"] = {
            "series": len(decided),
            "tolerance": cfg.tolerance,
            "model": decision([sc.recommended_cores or 0 for sc in decided]),
            "2 + N rule": decision([sc.rule_cores or 0 for sc in decided]),
        }
    sigma = float(math.sqrt(float(np.mean(resid_sq)))) if resid_sq else 0.0
    return table, tuple(scores), sigma


def fit_model(cfg: FitConfig, progress: ProgressFn = no_progress) -> FitReport:
    """Fit the model on every calibration point, validate it by leaving series out, save it.

    Saves the fitted parameters as JSON to ``cfg.output`` when given (see
    :func:`advisor.slowdown.save_params`); ``advisor recommend`` reads them back.
    """
    from advisor.slowdown import PLATFORMS, save_params

    loaded = load_points(cfg.calibration_dir, cfg.db)
    ts = training_set(loaded.points, cfg.max_slowdown, cfg.weighting, cfg.cpu_weight)
    if len(ts.y) < 3:
        raise InputError(
            f"only {len(ts.y)} fittable calibration points; need at least 3",
            source=str(cfg.calibration_dir or default_calibration_dir()),
        )
    X, y, w, labels = ts.arrays()
    progress("fit", 0, 1)
    est = _estimator(cfg, cfg.n_bootstrap).fit(X, y, sample_weight=w, groups=labels)
    progress("fit", 1, 1)
    table, scores, sigma = validate(ts, cfg, progress)
    est.sigma_log_ = sigma  # the interval is that of a configuration the fit has not seen

    platforms_seen = tuple(sorted({p.platform for p in ts.points if p.platform}))
    gpus_seen = tuple(sorted({p.gpus for p in ts.points if p.gpus}))
    warnings = list(loaded.problems) + list(ts.skipped)
    unseen = [p for p in PLATFORMS if p not in platforms_seen]
    if unseen:
        warnings.append(
            "extrapolation: no calibration data for platform(s) "
            + ", ".join(unseen)
            + "; their predictions use the relative GPU speed of their datasheets"
        )
    beaten = [b for b, e in table["baselines"].items() if not table["model"] < e]
    if beaten:
        warnings.append(
            "on held-out series the model does not beat: "
            + ", ".join(
                f"{b} ({table['baselines'][b]:.3f} against the model's {table['model']:.3f})"
                for b in beaten
            )
        )
    meta = {
        "fitted_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "platforms_seen": list(platforms_seen),
        "gpus_seen": list(gpus_seen),
        "points_fitted": len(ts.y),
        "cpu_points_fitted": len(ts.cpu_y),
        "validation": table,
        "loo_mape": table["mape"],  # held-out by series (the dashboard's "±N%")
        "tolerance": cfg.tolerance,
        "series": [i.as_evidence(cfg.tolerance) for i in ts.series_info.values()],
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
    params = est.to_params(meta)
    path = str(save_params(params, cfg.output)) if cfg.output else None
    return FitReport(
        points_loaded=len(loaded.points),
        points_fitted=len(ts.y),
        points_censored=sum(ts.censored),
        points_context=len(loaded.points) - len(ts.points) - len(ts.skipped) - len(ts.cpu_y),
        cpu_points_fitted=len(ts.cpu_y),
        series_fitted=len(set(ts.series)),
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
    )


def point_rows(loaded: LoadedPoints) -> list[dict[str, Any]]:
    """The points as plain rows (the columns of the table, plus where each was read)."""
    names = [f.name for f in fields(CalibrationPoint)]
    return [{n: getattr(p, n) for n in names} for p in loaded.points]
