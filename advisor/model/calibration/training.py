"""The training set: calibration points turned into the fit's rows, series by series.

How points become training targets (see docs/model.md):

- a series (:mod:`advisor.model.calibration.series`) of ``ttft_ms``, ``ttft_p50_ms`` or
  ``task_time_s`` at two core counts or more: each value over the geometric mean of its repeats
  at the series' largest core count (the reference the prediction is made against); its knee
  from :mod:`advisor.model.knee` on its (start, repeat) blocks;
- ``speedup``: the value itself, against 8 cores per GPU (the research's best count);
- ``timeout``: censored at the model's ``max_slowdown`` (at least that slow);
- ``cpu_api_server_cores``, ``cpu_engine_core_cores``, ``cpu_worker_cores`` at a series'
  largest core count: the CPU each process needs (:func:`cpu_observations`, the demand's
  data); ``prefix_hit_rate``: the series' prefix-hit input;
- any other metric (``tokenize_share``, ``dequeue_ms``, ...) is context, kept but not fitted;
- points of a CPU-only platform (``CPU``: the launcher's tests without a GPU) are not fitted;
- every series weighs 1 in total, split over its rows (:func:`series_weights`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from advisor.model.calibration.points import (
    CENSORED_METRICS,
    NOT_FITTED_PLATFORMS,
    SERIES_METRICS,
    SPEEDUP_METRICS,
    CalibrationPoint,
)
from advisor.model.calibration.series import (
    SeriesInfo,
    block_of,
    config_of,
    series_id,
    series_key,
)
from advisor.model.calibration.split import SplitRules

WEIGHTINGS = ("series", "repeat", "ratio", "none")
CPU_METRICS = {
    "cpu_api_server_cores": "api_server_cores",
    "cpu_engine_core_cores": "engine_core_cores",
    "cpu_worker_cores": "worker_cores",
}
CPU_PROCESS = {
    "cpu_api_server_cores": "api_server",
    "cpu_engine_core_cores": "engine_core",
    "cpu_worker_cores": "gpu_worker",
}
PREFIX_HIT_METRIC = "prefix_hit_rate"
GPU_BUSY_METRIC = "gpu_busy_share"
SPEEDUP_REF_CORES_PER_GPU = 8.0  # the research's best core count: "up to 8 x #GPUs"
KNEE_SEED = 0  # the measured knees' bootstrap seed (a fit is deterministic)


@dataclass(frozen=True)
class TrainingSet:
    """Design matrix rows, targets and the point behind each row.

    ``X``/``y``: slowdown rows (against each row's reference cores); ``cpu_*``: the measured
    CPU cores of a process (API server, engine core, GPU worker) at a series' largest core
    count, the demand's data. ``series``/``cpu_series`` label each row's series.
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
        """(X, y, weights, series labels) of slowdown and CPU rows together."""
        import numpy as np

        from advisor.model.slowdown import FEATURES

        X = np.asarray(self.X + self.cpu_X, dtype=float).reshape(-1, len(FEATURES))
        y = np.asarray(self.y + self.cpu_y, dtype=float)
        w = np.asarray(self.weights + self.cpu_weights, dtype=float)
        return X, y, w, np.asarray(self.series + self.cpu_series)

    def slowdown_arrays(self) -> tuple[Any, Any, Any, Any, Any]:
        """(X, y, weights, series labels, censored) of the slowdown rows alone."""
        import numpy as np

        from advisor.model.slowdown import FEATURES

        return (
            np.asarray(self.X, dtype=float).reshape(-1, len(FEATURES)),
            np.asarray(self.y, dtype=float),
            np.asarray(self.weights, dtype=float),
            np.asarray(self.series),
            np.asarray(self.censored, dtype=bool),
        )

    def training_series(self) -> list[str]:
        return [s for s, i in self.series_info.items() if not i.test]

    def test_series(self) -> list[str]:
        return [s for s, i in self.series_info.items() if i.test]


def series_weights(points: Sequence[CalibrationPoint], weighting: str = "series") -> list[float]:
    """The sample weight of each fitted point.

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
        return series_key(p) if p.metric in SERIES_METRICS else ("point", i)

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


def _knee(members: Sequence[CalibrationPoint], tolerance: float) -> tuple[str, int | None, str]:
    from advisor.model.knee import measure_knee

    samples: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for m in members:
        if m.value and m.cores:
            start, rep = block_of(m)
            samples[(start, rep, int(m.cores))].append(float(m.value))
    res = measure_knee(samples, tolerance=tolerance, seed=KNEE_SEED)
    return res.status, res.knee_cores, res.reason


def _series_busy(points: Sequence[CalibrationPoint]) -> dict[Any, float]:
    """Per configuration, the GPUs' mean busy share at its most cores (where no process waits
    for a core: what the load itself keeps the GPU doing)."""
    by: dict[Any, list[CalibrationPoint]] = defaultdict(list)
    for p in points:
        if p.metric == GPU_BUSY_METRIC and p.value is not None and p.cores_per_gpu is not None:
            by[config_of(p)].append(p)
    out = {}
    for key, members in by.items():
        top = max(m.cores_per_gpu or 0.0 for m in members)
        vals = [float(m.value or 0.0) for m in members if m.cores_per_gpu == top]
        out[key] = sum(vals) / len(vals)
    return out


def training_set(
    points: Sequence[CalibrationPoint],
    max_slowdown: float,
    weighting: str = "series",
    cpu_weight: float = 0.5,
    split: SplitRules | None = None,
    tolerance: float = 0.10,
) -> TrainingSet:
    """The points the model is fitted on (see the module doc); each measured process's CPU
    (API server, engine core, worker) of a series weighs ``cpu_weight`` in total; ``split``
    marks the test-only series; ``tolerance`` is the measured knees'."""
    b = _Builder(points, split)
    series: dict[tuple[Any, ...], list[CalibrationPoint]] = defaultdict(list)
    cpu: dict[Any, list[CalibrationPoint]] = defaultdict(list)
    for p in points:
        if p.metric in SPEEDUP_METRICS:
            if not b.not_fitted(p):
                b.add_speedup(p)
        elif p.metric in CENSORED_METRICS:
            if not b.not_fitted(p):
                b.add(p, max_slowdown, True, None)
                b.describe(p, None, {p.cores_per_gpu or 0.0: [max_slowdown]}, True)
        elif p.metric in SERIES_METRICS:
            if not b.not_fitted(p):
                series[series_key(p)].append(p)
        elif (
            p.metric in CPU_METRICS
            and p.value is not None
            and p.value >= 0
            and (p.platform or "").upper() not in NOT_FITTED_PLATFORMS
        ):
            cpu[config_of(p)].append(p)
    refs: dict[Any, float] = {}
    for members in series.values():
        ref = b.add_series(members, tolerance)
        if ref is not None:
            refs[config_of(members[0])] = ref
    weights = series_weights(b.used, weighting)
    for key, members in cpu.items():
        b.add_cpu(key, members, refs.get(key), cpu_weight)
    return TrainingSet(
        b.X,
        b.y,
        tuple(b.used),
        tuple(b.censored),
        tuple(b.skipped),
        tuple(weights),
        tuple(b.labels),
        b.cpu_X,
        b.cpu_y,
        tuple(b.cpu_used),
        tuple(b.cpu_w),
        tuple(b.cpu_labels),
        b.info,
    )


class _Builder:
    """The training set's rows as they are added: slowdown rows (with each series' record)
    and the processes' CPU rows; each row's features read the configuration's measured prefix
    hit and GPU busy share."""

    def __init__(self, points: Sequence[CalibrationPoint], split: SplitRules | None) -> None:
        self.split = split
        self.hits: dict[Any, list[float]] = defaultdict(list)
        for p in points:
            if p.metric == PREFIX_HIT_METRIC and p.value is not None:
                self.hits[config_of(p)].append(p.value)
        self.busy = _series_busy(points)
        self.X: list[list[float]] = []
        self.y: list[float] = []
        self.used: list[CalibrationPoint] = []
        self.censored: list[bool] = []
        self.labels: list[str] = []
        self.skipped: list[str] = []
        self.info: dict[str, SeriesInfo] = {}
        self.cpu_X: list[list[float]] = []
        self.cpu_y: list[float] = []
        self.cpu_used: list[CalibrationPoint] = []
        self.cpu_w: list[float] = []
        self.cpu_labels: list[str] = []

    def hit_of(self, p: CalibrationPoint) -> float:
        from advisor.model.slowdown import prefix_hit_of

        measured = self.hits.get(config_of(p))
        if measured:
            return sum(measured) / len(measured)
        return prefix_hit_of(p.workload)

    def row(self, p: CalibrationPoint, ref: float | None, target: str = "slowdown") -> list[float]:
        from advisor.model.slowdown import feature_row

        assert p.cores_per_gpu is not None
        c = config_of(p)
        return feature_row(
            p.cores_per_gpu,
            gpus=p.gpus,
            model_params_b=p.model_params_b,
            load_rps=p.load_rps,
            prompt_tokens=p.prompt_tokens,
            platform=p.platform,
            tp=c.tp,
            prefix_hit=self.hit_of(p),
            ref_cores_per_gpu=ref,
            renderer_workers=c.renderer_workers,
            target=target,
            executor=c.executor,
            gpu_busy=self.busy.get(c),
        )

    def add(self, p: CalibrationPoint, target: float, is_censored: bool, ref: float | None) -> None:
        self.X.append(self.row(p, ref))
        self.y.append(target)
        self.used.append(p)
        self.censored.append(is_censored)
        self.labels.append(series_id(p))

    def describe(
        self,
        p: CalibrationPoint,
        ref: float | None,
        by_cores: dict[float, list[float]],
        is_censored: bool = False,
        knee: tuple[str, int | None, str] = ("not resolved", None, "one ratio, no phases"),
    ) -> None:
        g = p.gpus or 1
        cores = sorted(by_cores)
        sid = series_id(p)
        c = config_of(p)
        self.info[sid] = SeriesInfo(
            sid,
            c,
            p.model_params_b,
            self.hit_of(p),
            None if ref is None else ref * g,
            tuple(c * g for c in cores),
            tuple(_geomean(by_cores[c]) for c in cores),
            is_censored,
            knee[0],
            knee[1],
            knee[2],
            self.split.is_test(sid, c.measured_on) if self.split is not None else False,
        )

    def not_fitted(self, p: CalibrationPoint) -> bool:
        if (p.platform or "").upper() in NOT_FITTED_PLATFORMS:
            self.skipped.append(
                f"{p.origin}: platform {p.platform} is a CPU-only test run, not a GPU "
                "serving measurement; not fitted"
            )
            return True
        return False

    def add_speedup(self, p: CalibrationPoint) -> None:
        """A published speedup: one ratio against the research's reference core count."""
        assert p.value is not None
        self.add(p, p.value, False, SPEEDUP_REF_CORES_PER_GPU)
        by_cores = {p.cores_per_gpu or 0.0: [p.value], SPEEDUP_REF_CORES_PER_GPU: [1.0]}
        self.describe(p, SPEEDUP_REF_CORES_PER_GPU, by_cores)

    def add_series(self, members: list[CalibrationPoint], tolerance: float) -> float | None:
        """A measured series as slowdowns against its most cores (its reference, returned), or
        None where one core count gives no slowdown."""
        if len({m.cores_per_gpu for m in members}) < 2:
            self.skipped.extend(
                f"{m.origin}: {m.metric} series with one core count cannot give a "
                "slowdown; not fitted"
                for m in members
            )
            return None
        ref = max(m.cores_per_gpu or 0.0 for m in members)
        base = _geomean([m.value for m in members if m.cores_per_gpu == ref and m.value])
        by_cores: dict[float, list[float]] = defaultdict(list)
        for m in members:
            assert m.value is not None and m.cores_per_gpu is not None
            self.add(m, m.value / base, False, ref)
            by_cores[m.cores_per_gpu].append(m.value / base)
        self.describe(members[0], ref, by_cores, knee=_knee(members, tolerance))
        return ref

    def add_cpu(
        self, key: Any, members: list[CalibrationPoint], ref: float | None, cpu_weight: float
    ) -> None:
        """A configuration's processes' CPU at its series' most cores (``ref``; else the CPU
        points' own most): only where cores are ample is a process's CPU its demand, and a
        worker process exists only with the multiprocess executor."""
        top = ref if ref is not None else max(m.cores_per_gpu or 0.0 for m in members)
        kept = [
            m
            for m in members
            if m.cores_per_gpu == top
            and not (m.metric == "cpu_worker_cores" and key.executor != "mp")
            and (m.value or 0) > 0
        ]
        per_kind: dict[str, int] = defaultdict(int)
        for m in kept:
            per_kind[m.metric] += 1
        for m in kept:
            assert m.value is not None
            self.cpu_X.append(self.row(m, None, CPU_METRICS[m.metric]))
            self.cpu_y.append(m.value)
            self.cpu_used.append(m)
            self.cpu_w.append(cpu_weight / per_kind[m.metric])
            self.cpu_labels.append(series_id(m))
        sid = series_id(members[0])
        if sid not in self.info and self.split is not None:
            first = members[0]
            record = SeriesInfo(sid, key, first.model_params_b, self.hit_of(first), None, (), ())
            self.info[sid] = replace(record, test=self.split.is_test(sid, key.measured_on))


def cpu_observations(ts: TrainingSet, series: set[str] | None = None) -> list[Any]:
    """The measured CPU of each process (the demand fit's data), of ``series`` (None: all)."""
    from advisor.model.demand import CpuObservation
    from advisor.model.slowdown import FEATURES

    busy_col = FEATURES.index("gpu_busy")
    out = []
    for p, label, x in zip(ts.cpu_points, ts.cpu_series, ts.cpu_X, strict=True):
        if series is not None and label not in series:
            continue
        c = config_of(p)
        start, rep = block_of(p)
        out.append(
            CpuObservation(
                label,
                f"{start}/{rep}",
                CPU_PROCESS[p.metric],
                float(p.value or 0.0),
                float(p.load_rps or 0.0) * float(p.prompt_tokens or 0.0),
                c.gpus,
                c.tp,
                c.executor,
                float(x[busy_col]),
            )
        )
    return out
