"""The TTFT-vs-cores curve from the CPU demand: numpy-only mechanism, features, parameters as JSON.

This is the part of the model that the job-submit path needs, so it imports numpy and nothing
heavier (scikit-learn's import alone costs about half a second). The scikit-learn estimator in
:mod:`advisor.model.estimator` fits the parameters; the recommend path loads the same parameters from JSON
(:func:`load_params`) and calls the same functions.

The mechanism (vLLM V1's CPU critical path; docs/model.md):

- CPU **demand** in cores is the sum of its parts, :mod:`advisor.model.demand`'s (the API server
  by tokens/s, an engine core per replica by executor, a busy-waiting worker per GPU with the
  multiprocess executor, which TP > 1 implies); its five parameters are fitted on measured
  per-process CPU, not on TTFT;

- the serving stack's threads share the job's ``c`` cores: below :data:`JOIN_RHO` of them
  (``rho = demand / c``) like the servers of an M/M/c queue with offered load ``demand`` (the
  wait of a CPU step relative to its service time, :func:`queue_wait`, negligible with a few
  cores to spare); from there on by processor sharing, every CPU step stretched in proportion
  to ``rho`` (busy-waiting workers time-share the cores with the threads that do work), joined
  continuously to the queue's wait (:func:`cpu_wait`), so an overloaded run is slower by a
  finite factor, as the measured ones were;
- how much of TTFT that wait is depends on how CPU-bound the request is: ``k = k_cpu x
  cpu_share`` with ``cpu_share = 1 / (1 + gpu_weight x (1 - prefix_hit) x (params_b / 8) /
  (gpu_speed x TP))``: a request whose prompt is served from the prefix cache is nearly all
  CPU (tokenization), a unique long prompt on a slow GPU nearly all GPU prefill;
- slowdown against ample cores: ``1 + k x W**q`` (``q``, the pole exponent, 1 by default);
- **pathological**: the serialised tokenizer (``renderer_workers`` threads, 1 by default)
  busier than it can be, ``api_per_100k_tok_s x tokens/s / 1e5 / renderer_workers >= 1``,
  which no number of cores repairs; or a demand beyond :data:`RHO_LIMIT` times the cores, far
  past any overload a series measured. Such a prediction is never a number: the point value is
  a display cap (``max_slowdown``) flagged ``pathological`` with an unbounded interval, and the
  recommendation says "pathological below N cores" instead.

Design-matrix column 0 is cores per GPU, column 1 the cores per GPU the slowdown is measured
against (0: ample), then the covariates (:data:`FEATURES`; ``executor_mp``: 1 multiprocess,
0 in-process, -1 vLLM's default for the TP), and a last column that says what a row's target
is (:data:`TARGETS`: a slowdown, or a process's measured CPU cores), then the GPUs' busy
share (1: always busy, how a serving job is sized; a bench series' own where it measured it).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from advisor.model import demand as demand_model

MODEL_ENV = "ADVISOR_MODEL"
MODEL_FORMAT = "advisor-slowdown-model/6"  # 6: the mp engine core follows the GPU busy share

# References of the covariates (an unknown value takes its reference).
REF_GPUS = 4.0
REF_MODEL_PARAMS_B = 8.0
REF_LOAD_RPS = 8.0
REF_PROMPT_TOKENS = 16384.0  # geometric middle of the research's 1.8k-114k attacker prompts
PLATFORMS: tuple[str, ...] = ("H100", "H200", "B200", "RTX PRO 6000 Blackwell")
# Dense BF16 tensor throughput relative to the H100 SXM (vendors' datasheets: H100/H200 ~989,
# B200 ~2250, A100 312, L40S 362, RTX PRO 6000 Blackwell ~500 TFLOPS): how fast a GPU eats the
# prefill work that competes with the CPU work for TTFT. Unknown GPUs count as an H100.
GPU_SPEED: dict[str, float] = {
    "H100": 1.0,
    "H200": 1.0,
    "B200": 2.27,
    "B300": 2.27,
    "A100": 0.32,
    "L40S": 0.37,
    "RTX PRO 6000 Blackwell": 0.5,
}
# Prefix-cache hit share of the bench's named workloads (docs/bench.md), when none is measured.
WORKLOAD_PREFIX_HIT: dict[str, float] = {
    "tokenize-heavy": 0.95,
    "unique": 0.0,
    "shared-prefix": 0.9,
    "attacker-victim": 0.0,
}
FEATURES: tuple[str, ...] = (
    "cores_per_gpu",
    "ref_cores_per_gpu",
    "gpus",
    "tp",
    "model_params_b",
    "load_rps",
    "prompt_tokens",
    "prefix_hit",
    "renderer_workers",
    "gpu_speed",
    "executor_mp",
    "target",
    "gpu_busy",
)
TARGETS: tuple[str, ...] = ("slowdown", "api_server_cores", "engine_core_cores", "worker_cores")
PARAM_NAMES: tuple[str, ...] = (*demand_model.DEMAND_PARAMS, "k_cpu", "gpu_weight")
N_DEMAND = len(demand_model.DEMAND_PARAMS)
# The prior of every parameter (the fit's ridge pulls log-parameters towards these): the
# demand's (advisor.model.demand: vLLM's 2 + N rule); a CPU-bound request's TTFT is about its CPU
# time (k_cpu 1); prefill of an uncached 8B prompt on an H100 about as long as tokenizing it
# (gpu_weight 1).
PRIOR: tuple[float, ...] = (*demand_model.DEMAND_PRIOR, 1.0, 1.0)
_DEFAULTS = (
    np.nan,
    0.0,
    REF_GPUS,
    0.0,
    REF_MODEL_PARAMS_B,
    REF_LOAD_RPS,
    REF_PROMPT_TOKENS,
    0.0,
    1.0,
    1.0,
    -1.0,
    0.0,
    1.0,
)
DEFAULT_POLE_EXPONENT = 1.0
DISPLAY_CAP = 25.0  # what charts draw in the pathological region (never reported as a number)
# Below this utilisation of the cores the M/M/c queue's wait, from it on processor sharing
# (fixed from the mechanism before any score was read: well below 1, where the queue form
# still describes open arrivals; docs/model.md).
JOIN_RHO = 0.8
# Demand beyond this many times the cores is pathological: no series measured an overload
# near it, so the processor-sharing stretch would be an extrapolation (docs/model.md).
RHO_LIMIT = 2.0


def platform_speed(platform: str | None) -> float:
    """Relative GPU speed of a platform (:data:`GPU_SPEED`; 1.0 when unknown)."""
    return GPU_SPEED.get(platform or "", 1.0)


def prefix_hit_of(workload: str | None, prefix_hit: float | None = None) -> float:
    """The prefix-cache hit share: given, else the named workload's (the part before a ``/``),
    else 0 (unique prompts)."""
    if prefix_hit is not None and not (isinstance(prefix_hit, float) and math.isnan(prefix_hit)):
        return float(min(max(prefix_hit, 0.0), 1.0))
    return WORKLOAD_PREFIX_HIT.get((workload or "").split("/")[0].strip().lower(), 0.0)


def renderer_workers_of(workload: str | None) -> float | None:
    """Renderer workers a bench workload name carries (``tokenize-heavy/rw4``: 4), else None."""
    for part in (workload or "").split("/")[1:]:
        part = part.strip().lower()
        if part.startswith("rw") and part[2:].isdigit() and int(part[2:]) > 0:
            return float(part[2:])
    return None


def feature_row(
    cores_per_gpu: float,
    *,
    gpus: float | None = None,
    model_params_b: float | None = None,
    load_rps: float | None = None,
    prompt_tokens: float | None = None,
    platform: str | None = None,
    tp: float | None = None,
    prefix_hit: float | None = None,
    renderer_workers: float | None = None,
    ref_cores_per_gpu: float | None = None,
    target: str = "slowdown",
    executor: str | None = None,
    gpu_busy: float | None = None,
) -> list[float]:
    """One design-matrix row (see :data:`FEATURES`); unknown covariates take their reference
    (tp: the GPUs; prefix hit: 0; renderer workers: 1; reference cores: ample; executor:
    vLLM's default for the TP; GPU busy: always, as a serving job is sized)."""

    def known(v: float | None, ref: float) -> float:
        if v is None or (isinstance(v, float) and math.isnan(v)) or v <= 0:
            return ref
        return float(v)

    g = known(gpus, REF_GPUS)
    return [
        float(cores_per_gpu),
        known(ref_cores_per_gpu, 0.0),
        g,
        min(known(tp, g), g),
        known(model_params_b, REF_MODEL_PARAMS_B),
        REF_LOAD_RPS if load_rps is None or load_rps < 0 else float(load_rps),
        known(prompt_tokens, REF_PROMPT_TOKENS),
        0.0 if prefix_hit is None else float(min(max(prefix_hit, 0.0), 1.0)),
        known(renderer_workers, 1.0),
        platform_speed(platform),
        -1.0 if executor is None else 1.0 if executor == "mp" else 0.0,
        float(TARGETS.index(target)),
        1.0 if gpu_busy is None or math.isnan(gpu_busy) else min(max(float(gpu_busy), 0.0), 1.0),
    ]


def _columns(X: np.ndarray) -> dict[str, np.ndarray]:
    """The design matrix as named, sanitised columns (missing trailing columns: defaults)."""
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X.reshape(1, -1)
    full = np.tile(np.asarray(_DEFAULTS, dtype=float), (X.shape[0], 1))
    m = min(X.shape[1], len(FEATURES))
    full[:, :m] = X[:, :m]
    c = dict(zip(FEATURES, full.T, strict=True))
    gpus = np.clip(np.nan_to_num(c["gpus"], nan=REF_GPUS), 1.0, 1024.0)
    tp = np.nan_to_num(c["tp"], nan=0.0)
    tp = np.where(tp >= 1, np.minimum(tp, gpus), gpus)
    ex = np.nan_to_num(c["executor_mp"], nan=-1.0)
    return {
        "cores": np.clip(np.nan_to_num(c["cores_per_gpu"], nan=1.0), 1e-6, 1e6) * gpus,
        "ref": np.where(
            c["ref_cores_per_gpu"] > 0, np.clip(c["ref_cores_per_gpu"], 1e-6, 1e6) * gpus, np.inf
        ),
        "gpus": gpus,
        "tp": tp,
        "mp": np.where(ex < 0, tp > 1, ex >= 0.5) | (tp > 1),
        "model": np.clip(c["model_params_b"], 0.01, 1e5),
        "rps": np.clip(c["load_rps"], 0.0, 1e6),
        "tokens": np.clip(c["prompt_tokens"], 1.0, 1e8),
        "hit": np.clip(c["prefix_hit"], 0.0, 1.0),
        "renderers": np.clip(c["renderer_workers"], 1.0, 1e3),
        "speed": np.clip(c["gpu_speed"], 0.01, 100.0),
        "target": np.clip(np.rint(np.nan_to_num(c["target"])), 0, len(TARGETS) - 1).astype(int),
        "busy": np.clip(np.nan_to_num(c["gpu_busy"], nan=1.0), 0.0, 1.0),
    }


def queue_wait(servers: np.ndarray, load: np.ndarray) -> np.ndarray:
    """Mean wait in an M/M/c queue with ``servers`` (real) and offered ``load``, in units of
    the service time: Sakasegawa's closed form ``rho**(sqrt(2 (c + 1)) - 1) / (c (1 - rho))``
    with ``rho = load / c`` (exact for one server, close to Erlang C for more, and smooth in
    ``c``); inf where the servers do not exceed the load."""
    c = np.asarray(servers, dtype=float)
    rho = np.asarray(load, dtype=float) / c
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = np.power(np.clip(rho, 0.0, None), np.sqrt(2.0 * (c + 1.0)) - 1.0) / (c * (1.0 - rho))
    return np.where(rho < 1.0, w, np.inf)


@dataclass(frozen=True)
class Mechanism:
    """The mechanism's quantities for each row: demand, its parts, the wait, the slowdown."""

    demand_cores: np.ndarray  # cores the server's processes need (advisor.model.demand)
    api_server_cores: np.ndarray
    engine_core_cores: np.ndarray  # per engine core (one per data-parallel replica)
    worker_cores: np.ndarray  # per GPU worker (0 with the in-process executor)
    tokenizer_utilisation: np.ndarray  # of the serialised tokenizer thread(s)
    cpu_share: np.ndarray  # k_eff / k_cpu: how CPU-bound a request is with ample cores
    slowdown: np.ndarray  # against the reference cores (ample: 1 at infinity); inf if patho
    pathological: np.ndarray


def cpu_wait(servers: np.ndarray, load: np.ndarray) -> np.ndarray:
    """The wait of a CPU step relative to its service time, finite at any load.

    Below :data:`JOIN_RHO` (``rho = load / servers``) the queue's wait (:func:`queue_wait`);
    from there on processor sharing: the busy-waiting workers and the threads that do work share
    the cores, so every step is stretched in proportion to ``rho`` (slope 1, the ``D/c - 1`` of
    a step stretched by ``D/c``), starting from the queue's wait at the join. Continuous, and
    decreasing in ``servers`` at a fixed load on both sides of the join."""
    c = np.asarray(servers, dtype=float)
    rho = np.asarray(load, dtype=float) / c
    below = queue_wait(c, np.minimum(rho, JOIN_RHO) * c)
    at_join = queue_wait(c, JOIN_RHO * c)
    return np.where(rho < JOIN_RHO, below, at_join + (rho - JOIN_RHO))


def _slowdown_at(cores: np.ndarray, demand: np.ndarray, k: np.ndarray, q: float) -> np.ndarray:
    wait = cpu_wait(cores, demand)
    with np.errstate(invalid="ignore", over="ignore"):
        s = 1.0 + k * np.power(np.maximum(wait, 0.0), q)
    return np.where(demand <= RHO_LIMIT * cores, s, np.inf)


def fewest_finite_cores(demand_cores: float) -> int:
    """The fewest whole cores at which a demand is not beyond :data:`RHO_LIMIT` (the curve
    has a number there unless the tokenizer is saturated)."""
    return max(1, int(math.ceil(demand_cores / RHO_LIMIT - 1e-9)))


def mechanism(
    values: Sequence[float] | np.ndarray,
    X: np.ndarray,
    pole_exponent: float = DEFAULT_POLE_EXPONENT,
    cols: dict[str, np.ndarray] | None = None,
) -> Mechanism:
    """Evaluate the mechanism with parameters ``values`` (natural units, :data:`PARAM_NAMES`);
    ``cols`` (``_columns(X)``, computed once) spares the work when many sets are evaluated."""
    values = [float(v) for v in values]
    kc, gw = values[N_DEMAND:]
    c = _columns(X) if cols is None else cols
    api, engines, workers, _, demand, tokenizer = demand_model.demand_arrays(
        values[:N_DEMAND],
        tokens_per_s=c["rps"] * c["tokens"],
        gpus=c["gpus"],
        tp=c["tp"],
        mp=c["mp"],
        renderer_workers=c["renderers"],
        gpu_busy=c["busy"],
    )
    replicas = np.maximum(np.floor(c["gpus"] / c["tp"]), 1.0)
    share = 1.0 / (
        1.0 + gw * (1.0 - c["hit"]) * (c["model"] / REF_MODEL_PARAMS_B) / (c["speed"] * c["tp"])
    )
    k = kc * share
    s_now = _slowdown_at(c["cores"], demand, k, pole_exponent)
    s_ref = np.where(
        np.isinf(c["ref"]), 1.0, _slowdown_at(np.minimum(c["ref"], 1e6), demand, k, pole_exponent)
    )
    patho = (demand > RHO_LIMIT * c["cores"]) | (tokenizer >= 1.0)
    with np.errstate(invalid="ignore"):
        rel = np.where(patho, np.inf, s_now / np.where(np.isfinite(s_ref), s_ref, 1.0))
    return Mechanism(demand, api, engines / replicas, workers, tokenizer, share, rel, patho)


def target_values(
    values: Sequence[float] | np.ndarray,
    X: np.ndarray,
    pole_exponent: float = DEFAULT_POLE_EXPONENT,
) -> tuple[np.ndarray, np.ndarray]:
    """What each row's target predicts (a slowdown, or a process's cores), and the pathological
    flag (slowdown rows only)."""
    m = mechanism(values, X, pole_exponent)
    kind = _columns(X)["target"]
    out = np.select(
        [kind == 1, kind == 2, kind == 3],
        [m.api_server_cores, m.engine_core_cores, m.worker_cores],
        m.slowdown,
    )
    return out, m.pathological & (kind == 0)


@dataclass(frozen=True)
class CurveParams:
    """Fitted parameters, their bootstrap refits (by series), and what the fit saw."""

    values: tuple[float, ...]  # natural units, one per PARAM_NAMES
    max_slowdown: float = DISPLAY_CAP  # drawn in the pathological region; never a prediction
    sigma_log: float = 0.0  # spread of log residuals of a held-out series (prediction noise)
    interval: float = 0.9  # e.g. 0.9 for a 90% interval
    pole_exponent: float = DEFAULT_POLE_EXPONENT
    bootstrap_values: tuple[tuple[float, ...], ...] = ()
    param_names: tuple[str, ...] = PARAM_NAMES
    feature_names: tuple[str, ...] = FEATURES
    meta: dict[str, Any] = field(default_factory=dict)

    def named(self) -> dict[str, float]:
        return dict(zip(self.param_names, self.values, strict=True))

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "format": MODEL_FORMAT,
            "param_names": list(self.param_names),
            "values": list(self.values),
            "feature_names": list(self.feature_names),
            "max_slowdown": self.max_slowdown,
            "sigma_log": self.sigma_log,
            "interval": self.interval,
            "pole_exponent": self.pole_exponent,
            "bootstrap_values": [list(t) for t in self.bootstrap_values],
            "meta": self.meta,
        }

    @classmethod
    def from_json_dict(cls, data: dict[str, Any], source: str = "<model>") -> CurveParams:
        from advisor.errors import InputError

        fmt = data.get("format") if isinstance(data, dict) else None
        if fmt != MODEL_FORMAT:
            raise InputError(
                f"not an advisor model file: format {fmt!r}, expected {MODEL_FORMAT!r}; refit "
                "with `advisor fit --output FILE`",
                source=source,
            )
        assert isinstance(data, dict)
        try:
            params = cls(
                values=tuple(float(v) for v in data["values"]),
                max_slowdown=float(data["max_slowdown"]),
                sigma_log=float(data["sigma_log"]),
                interval=float(data["interval"]),
                pole_exponent=float(data["pole_exponent"]),
                bootstrap_values=tuple(
                    tuple(float(v) for v in t) for t in data.get("bootstrap_values", [])
                ),
                param_names=tuple(str(v) for v in data["param_names"]),
                feature_names=tuple(str(v) for v in data["feature_names"]),
                meta=dict(data.get("meta") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"model file is incomplete or malformed: {exc}", source=source
            ) from exc
        if params.param_names != PARAM_NAMES or len(params.values) != len(PARAM_NAMES):
            raise InputError(
                f"parameters {list(params.param_names)} are not this version's {list(PARAM_NAMES)}",
                source=source,
                field="param_names",
            )
        if any(len(t) != len(PARAM_NAMES) for t in params.bootstrap_values):
            raise InputError(
                "bootstrap parameters do not match the model",
                source=source,
                field="bootstrap_values",
            )
        if not all(v > 0 and math.isfinite(v) for v in params.values):
            raise InputError(
                "every parameter must be a positive number", source=source, field="values"
            )
        return params


@dataclass(frozen=True)
class Prediction:
    """Slowdown of TTFT against the reference cores, with its interval (one entry per row).

    ``slowdown`` is :attr:`CurveParams.max_slowdown` where ``pathological`` (a display value,
    not a prediction); ``high`` is inf there.
    """

    slowdown: np.ndarray
    low: np.ndarray
    high: np.ndarray
    pathological: np.ndarray


def evaluate(params: CurveParams, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Point slowdown (display cap where pathological) and the pathological flag, row by row."""
    m = mechanism(params.values, X, params.pole_exponent)
    return np.minimum(m.slowdown, params.max_slowdown), m.pathological


def total_cores_grid(template: Sequence[float] | np.ndarray, max_total: int) -> np.ndarray:
    """Rows of ``template`` (a design-matrix row) at 1 .. ``max_total`` total cores, each
    against ample cores (its slowdown target)."""
    row = np.asarray(template, dtype=float).copy()
    if row.shape[0] < len(FEATURES):
        row = np.concatenate([row, np.asarray(_DEFAULTS[row.shape[0] :], dtype=float)])
    gpus = float(_columns(row.reshape(1, -1))["gpus"][0])
    grid = np.tile(row[: len(FEATURES)], (max(int(max_total), 1), 1))
    grid[:, 0] = np.arange(1, grid.shape[0] + 1) / gpus
    grid[:, 1] = 0.0
    grid[:, FEATURES.index("target")] = 0.0
    return grid


def knee_total_cores(
    params: CurveParams,
    template: Sequence[float] | np.ndarray,
    tolerance: float,
    max_total: int,
) -> int | None:
    """Fewest total cores whose predicted TTFT is within ``tolerance`` of ample cores (and
    not pathological), for the configuration of the design-matrix row ``template``; None when
    even ``max_total`` is not enough."""
    return knees_total_cores(params, template, tolerance, max_total, [params.values])[0]


def knees_total_cores(
    params: CurveParams,
    template: Sequence[float] | np.ndarray,
    tolerance: float,
    max_total: int,
    value_sets: Sequence[Sequence[float]],
) -> list[int | None]:
    """:func:`knee_total_cores` for each parameter set of ``value_sets`` (e.g. the refits)."""
    grid = total_cores_grid(template, max_total)
    cols = _columns(grid)
    out: list[int | None] = []
    for v in value_sets:
        m = mechanism(v, grid, params.pole_exponent, cols)
        ok = ~m.pathological & (m.slowdown <= 1.0 + tolerance)
        out.append(int(np.argmax(ok)) + 1 if ok.any() else None)
    return out


def _z(interval: float) -> float:
    # Two-sided normal quantile without scipy: inverse of erf by bisection (cheap, exact enough).
    target = 0.5 + interval / 2.0
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2.0
        if 0.5 * (1.0 + math.erf(mid / math.sqrt(2.0))) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def bootstrap_curves(params: CurveParams, X: np.ndarray) -> np.ndarray:
    """Slowdowns of every bootstrap refit (inf where pathological), shape (n_bootstrap, rows)."""
    X = np.asarray(X, dtype=float)
    cols = _columns(X)
    out = [mechanism(v, X, params.pole_exponent, cols).slowdown for v in params.bootstrap_values]
    return np.vstack(out) if out else np.empty((0, X.shape[0]))


def predict(params: CurveParams, X: np.ndarray) -> Prediction:
    """Point slowdown, interval and pathological flag for each row of the design matrix ``X``.

    The interval: quantiles of the series-bootstrap refits, widened by the held-out residual
    spread; its upper end is inf where a refit (or the point) is pathological.
    """
    X = np.asarray(X, dtype=float)
    m = mechanism(params.values, X, params.pole_exponent)
    point = m.slowdown
    alpha = (1.0 - params.interval) / 2.0
    boots = np.minimum(bootstrap_curves(params, X), 1e300)  # inf: pathological refit
    if boots.shape[0]:
        lo_b = np.minimum(np.quantile(boots, alpha, axis=0), point)
        hi_b = np.maximum(np.quantile(boots, 1.0 - alpha, axis=0), point)
        lo_b = np.where(lo_b >= 1e299, np.inf, lo_b)
        hi_b = np.where(hi_b >= 1e299, np.inf, hi_b)
    else:
        lo_b, hi_b = point.copy(), point.copy()
    spread = math.exp(_z(params.interval) * params.sigma_log)
    with np.errstate(invalid="ignore"):
        low = np.where(np.isfinite(lo_b), np.maximum(lo_b / spread, 1.0), params.max_slowdown)
        high = np.where(np.isfinite(hi_b), hi_b * spread, np.inf)
    return Prediction(
        slowdown=np.minimum(point, params.max_slowdown),
        low=np.minimum(low, params.max_slowdown),
        high=high,
        pathological=m.pathological,
    )


def shipped_model_path() -> Path:
    """The fitted model shipped with the package (refit with ``advisor fit --output``)."""
    return Path(__file__).resolve().parent.parent / "data" / "model.json"


def load_params(path: str | os.PathLike[str] | None = None) -> CurveParams:
    """Fitted parameters from ``path``, else ``$ADVISOR_MODEL``, else the shipped model."""
    from advisor.errors import InputError, NotFoundError

    chosen = Path(path) if path else Path(os.environ.get(MODEL_ENV) or shipped_model_path())
    try:
        text = chosen.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise NotFoundError(
            f"{chosen}: no such model file; fit one with `advisor fit --output {chosen}`"
        ) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", source=str(chosen), line=exc.lineno) from exc
    return CurveParams.from_json_dict(data, source=str(chosen))


def save_params(params: CurveParams, path: str | os.PathLike[str]) -> Path:
    """Write the parameters as plain JSON (never pickle); return the path."""
    p = Path(path)
    if p.parent and not p.parent.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(params.to_json_dict(), indent=2) + "\n", encoding="utf-8")
    return p


def coverage_warnings(
    params: CurveParams, *, platform: str | None, gpus: float | None, rows: Sequence[str] = ()
) -> list[str]:
    """Why a prediction is an extrapolation: a platform or GPU count the fit never saw."""
    seen_platforms = params.meta.get("platforms_seen") or []
    seen_gpus = params.meta.get("gpus_seen") or []
    out = [*rows]
    if platform is not None and seen_platforms and platform not in seen_platforms:
        speed = (
            f"from its datasheet speed, {platform_speed(platform):g} times an H100's"
            if platform in GPU_SPEED
            else "as an H100 (its speed is not known)"
        )
        out.append(
            f"extrapolation: no calibration data for platform {platform!r} "
            f"(calibrated on {', '.join(seen_platforms)}); predicted {speed}"
        )
    if gpus is not None and seen_gpus and int(gpus) not in {int(g) for g in seen_gpus}:
        out.append(
            f"extrapolation: no calibration data for {int(gpus)} GPUs "
            f"(calibrated on {', '.join(str(int(g)) for g in sorted(seen_gpus))})"
        )
    return out
