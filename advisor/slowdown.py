"""The TTFT-slowdown curve itself: numpy-only math, features, and the fitted parameters as JSON.

This is the part of the model that the job-submit path needs, so it imports numpy and nothing
heavier (scikit-learn's import alone costs about half a second). The scikit-learn estimator in
:mod:`advisor.model` fits the parameters and calls :func:`curve` to predict; the recommend path
loads the same parameters from JSON (:func:`load_params`) and calls the same functions.

The curve (a queueing-style saturating law, monotone by construction):

- the serving stack's CPU demand per GPU is ``demand = exp(theta[0] + x . theta[1:])`` cores,
  where ``x`` are the covariates (log2 GPUs, model size, load, prompt tokens over a reference,
  and one-hot platform offsets);
- with ``c`` cores per GPU the CPU load is ``rho = demand / c``;
- for ``rho < 1`` the slowdown of TTFT against ample cores is ``1 + k * rho / (1 - rho)**q``:
  it falls towards 1 as cores grow and never increases with cores (``k > 0``, ``q > 0``);
  ``log k = log_k + x . k_coef`` may shift with the covariates too (the fit lets only the
  platform columns do so): how far the CPU work shows in TTFT differs by platform and stack
  (the research's Blackwell cliff, the H200 TP=2 runs' gradual decline), yet ``k`` does not
  depend on cores, so the curve stays monotone;
  ``q`` (the pole exponent, default 2) sets how sharp the cliff near the demand is: 1 is the
  M/M/1 law; 2 was chosen by leave-one-out on the published points (docs/model.md);
- for ``rho >= 1`` (CPU demand above the cores given) the queues are unbounded and runs time out:
  the **pathological region**. It is not extrapolated: the slowdown is reported as
  ``max_slowdown`` with the flag ``pathological`` and an unbounded upper interval.

Design-matrix column 0 is cores per GPU; the other columns are the covariates.
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

MODEL_ENV = "ADVISOR_MODEL"
MODEL_FORMAT = "advisor-slowdown-model/2"
# Format 1 had one shared k (no ``k_coef``): it loads as format 2 with every k offset at 0.
OLD_MODEL_FORMATS = ("advisor-slowdown-model/1",)

# References of the covariates: a value equal to its reference (or unknown) contributes 0.
REF_GPUS = 4.0
REF_MODEL_PARAMS_B = 8.0
REF_LOAD_RPS = 8.0
REF_PROMPT_TOKENS = 16384.0  # geometric middle of the research's 1.8k-114k attacker prompts
PLATFORMS: tuple[str, ...] = ("H100", "H200", "B200", "RTX PRO 6000 Blackwell")
FEATURES: tuple[str, ...] = (
    "cores_per_gpu",
    "log2_gpus",
    "log2_model_params_b",
    "log2_load_rps",
    "log2_prompt_tokens",
    *(f"platform={p}" for p in PLATFORMS),
)
DEFAULT_POLE_EXPONENT = 2.0
# Cores per GPU used as "ample" when a ratio is asked against ample cores.
AMPLE_CORES_PER_GPU = 1.0e6
_MIN_CORES = 1e-6


def _log2_ratio(value: float | None, ref: float) -> float:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value <= 0:
        return 0.0
    return math.log2(float(value) / ref)


def feature_row(
    cores_per_gpu: float,
    *,
    gpus: float | None = None,
    model_params_b: float | None = None,
    load_rps: float | None = None,
    prompt_tokens: float | None = None,
    platform: str | None = None,
) -> list[float]:
    """One design-matrix row (see :data:`FEATURES`); unknown covariates sit at their reference."""
    row = [
        float(cores_per_gpu),
        _log2_ratio(gpus, REF_GPUS),
        _log2_ratio(model_params_b, REF_MODEL_PARAMS_B),
        _log2_ratio(load_rps, REF_LOAD_RPS),
        _log2_ratio(prompt_tokens, REF_PROMPT_TOKENS),
    ]
    row.extend(1.0 if platform == p else 0.0 for p in PLATFORMS)
    return row


def curve(
    theta: np.ndarray,
    log_k: float,
    max_slowdown: float,
    X: np.ndarray,
    pole_exponent: float = DEFAULT_POLE_EXPONENT,
    k_coef: np.ndarray | Sequence[float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Slowdown against ample cores for each row of ``X``, and the pathological flag.

    ``theta`` has one more entry than ``X`` has covariates (the intercept first); ``k_coef``
    (optional, one entry per covariate, zeros where ``k`` is shared) shifts ``log k`` row by row.
    With fitted parameters at hand, prefer :func:`evaluate`, which passes everything along.
    """
    X = np.asarray(X, dtype=float)
    cores = np.maximum(X[:, 0], _MIN_CORES)
    log_demand = theta[0] + X[:, 1:] @ theta[1:]
    rho = np.exp(np.clip(log_demand, -50.0, 50.0)) / cores
    if k_coef is None:
        k: float | np.ndarray = math.exp(log_k)
    else:
        k = np.exp(np.clip(log_k + X[:, 1:] @ np.asarray(k_coef, dtype=float), -50.0, 50.0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        gap = np.maximum(1.0 - rho, 1e-300) ** pole_exponent
        raw = np.where(rho < 1.0, 1.0 + k * rho / gap, np.inf)
    pathological = raw >= max_slowdown
    return np.minimum(raw, max_slowdown), pathological


@dataclass(frozen=True)
class CurveParams:
    """Fitted parameters of the curve, plus what the fit saw (for extrapolation warnings)."""

    theta: tuple[float, ...]
    log_k: float
    max_slowdown: float
    sigma_log: float  # std of log residuals (prediction noise around the curve)
    interval: float  # e.g. 0.9 for a 90% interval
    pole_exponent: float = DEFAULT_POLE_EXPONENT
    bootstrap_theta: tuple[tuple[float, ...], ...] = ()
    bootstrap_log_k: tuple[float, ...] = ()
    feature_names: tuple[str, ...] = FEATURES
    meta: dict[str, Any] = field(default_factory=dict)
    # Offsets of log k, one per covariate (feature_names[1:]); () = one shared k (format 1).
    k_coef: tuple[float, ...] = ()
    bootstrap_k_coef: tuple[tuple[float, ...], ...] = ()

    def k_coef_array(self) -> np.ndarray | None:
        """``k_coef`` as an array for :func:`curve`, or None when k is shared."""
        return np.asarray(self.k_coef, dtype=float) if self.k_coef else None

    def k_offsets(self) -> dict[str, float]:
        """The non-zero log-k offsets by covariate name (e.g. ``platform=H200``)."""
        return {n: v for n, v in zip(self.feature_names[1:], self.k_coef, strict=False) if v}

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "format": MODEL_FORMAT,
            "feature_names": list(self.feature_names),
            "theta": list(self.theta),
            "log_k": self.log_k,
            "max_slowdown": self.max_slowdown,
            "sigma_log": self.sigma_log,
            "interval": self.interval,
            "pole_exponent": self.pole_exponent,
            "bootstrap_theta": [list(t) for t in self.bootstrap_theta],
            "bootstrap_log_k": list(self.bootstrap_log_k),
            "k_coef": list(self.k_coef) or [0.0] * (len(self.theta) - 1),
            "bootstrap_k_coef": [list(t) for t in self.bootstrap_k_coef]
            or [[0.0] * (len(self.theta) - 1) for _ in self.bootstrap_theta],
            "meta": self.meta,
        }

    @classmethod
    def from_json_dict(cls, data: dict[str, Any], source: str = "<model>") -> CurveParams:
        from advisor.errors import InputError

        fmt = data.get("format") if isinstance(data, dict) else None
        if fmt not in (MODEL_FORMAT, *OLD_MODEL_FORMATS):
            raise InputError(
                f"not an advisor model file: format {fmt!r}, expected {MODEL_FORMAT!r} (or "
                f"{', '.join(map(repr, OLD_MODEL_FORMATS))}); refit with `advisor fit --output`",
                source=source)
        assert isinstance(data, dict)
        try:
            theta = tuple(float(v) for v in data["theta"])
            names = tuple(str(v) for v in data["feature_names"])
            boot = tuple(tuple(float(v) for v in t) for t in data.get("bootstrap_theta", []))
            if fmt == MODEL_FORMAT:
                k_coef = tuple(float(v) for v in data["k_coef"])
                boot_k = tuple(tuple(float(v) for v in t) for t in data["bootstrap_k_coef"])
            else:  # format 1: one shared k
                k_coef, boot_k = (), ()
            params = cls(
                theta=theta,
                log_k=float(data["log_k"]),
                max_slowdown=float(data["max_slowdown"]),
                sigma_log=float(data["sigma_log"]),
                interval=float(data["interval"]),
                pole_exponent=float(data["pole_exponent"]),
                bootstrap_theta=boot,
                bootstrap_log_k=tuple(float(v) for v in data.get("bootstrap_log_k", [])),
                feature_names=names,
                meta=dict(data.get("meta") or {}),
                k_coef=k_coef,
                bootstrap_k_coef=boot_k,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"model file is incomplete or malformed: {exc}", source=source) from exc
        if len(theta) != len(names):
            raise InputError(
                f"{len(theta)} coefficients for {len(names)} features", source=source,
                field="theta",
            )
        if any(len(t) != len(theta) for t in boot) or len(boot) != len(params.bootstrap_log_k):
            raise InputError("bootstrap parameters do not match the model", source=source,
                             field="bootstrap_theta")
        if k_coef and (len(k_coef) != len(theta) - 1 or len(boot_k) != len(boot)
                       or any(len(t) != len(k_coef) for t in boot_k)):
            raise InputError("k offsets do not match the model", source=source, field="k_coef")
        return params


@dataclass(frozen=True)
class Prediction:
    """Slowdown of TTFT against ample cores, with its interval (arrays, one entry per row)."""

    slowdown: np.ndarray
    low: np.ndarray
    high: np.ndarray  # inf where the upper end is in the pathological region
    pathological: np.ndarray


def evaluate(params: CurveParams, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Point slowdown and pathological flag of the fitted curve for each row of ``X``."""
    return curve(np.asarray(params.theta), params.log_k, params.max_slowdown, X,
                 params.pole_exponent, params.k_coef_array())


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
    """Slowdowns of every bootstrap refit, shape (n_bootstrap, n_rows); empty when none."""
    X = np.asarray(X, dtype=float)
    kcs: Sequence[Sequence[float] | None] = (
        params.bootstrap_k_coef if params.k_coef else [None] * len(params.bootstrap_theta))
    out = [
        curve(np.asarray(t), lk, params.max_slowdown, X, params.pole_exponent,
              None if kc is None else np.asarray(kc))[0]
        for t, lk, kc in zip(params.bootstrap_theta, params.bootstrap_log_k, kcs, strict=True)
    ]
    return np.vstack(out) if out else np.empty((0, X.shape[0]))


def predict(params: CurveParams, X: np.ndarray) -> Prediction:
    """Point slowdown, interval and pathological flag for each row of the design matrix ``X``."""
    X = np.asarray(X, dtype=float)
    point, patho = evaluate(params, X)
    alpha = (1.0 - params.interval) / 2.0
    boots = bootstrap_curves(params, X)
    if boots.shape[0]:
        lo_b = np.minimum(np.quantile(boots, alpha, axis=0), point)
        hi_b = np.maximum(np.quantile(boots, 1.0 - alpha, axis=0), point)
    else:
        lo_b, hi_b = point.copy(), point.copy()
    spread = math.exp(_z(params.interval) * params.sigma_log)
    low = np.maximum(lo_b / spread, 1.0)
    high = hi_b * spread
    high = np.where(patho | (hi_b >= params.max_slowdown), np.inf, high)
    return Prediction(slowdown=point, low=low, high=high, pathological=patho)


def ratio_interval(
    params: CurveParams, X_num: np.ndarray, X_den: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point, low and high of slowdown(X_num) / slowdown(X_den), row by row.

    Used for the speedup of a recommendation over the current cores: each bootstrap refit gives
    one ratio, so the interval keeps the correlation between the two predictions; the residual
    noise widens it as for a single prediction. The high end is inf when the numerator sits in
    the pathological region.
    """
    num, patho = evaluate(params, X_num)
    den, _ = evaluate(params, X_den)
    point = num / den
    alpha = (1.0 - params.interval) / 2.0
    bn, bd = bootstrap_curves(params, X_num), bootstrap_curves(params, X_den)
    if bn.shape[0]:
        ratios = bn / bd
        lo_b = np.minimum(np.quantile(ratios, alpha, axis=0), point)
        hi_b = np.maximum(np.quantile(ratios, 1.0 - alpha, axis=0), point)
    else:
        lo_b, hi_b = point.copy(), point.copy()
    spread = math.exp(_z(params.interval) * params.sigma_log)
    low = np.maximum(lo_b / spread, np.minimum(1.0, point))
    high = np.where(patho, np.inf, hi_b * spread)
    return point, low, high


def shipped_model_path() -> Path:
    """The fitted model shipped with the package (refit with ``advisor fit --output``)."""
    return Path(__file__).resolve().parent / "data" / "model.json"


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
        out.append(
            f"extrapolation: no calibration data for platform {platform!r} "
            f"(calibrated on {', '.join(seen_platforms)}); treated like the reference platform"
        )
    if gpus is not None and seen_gpus and int(gpus) not in {int(g) for g in seen_gpus}:
        out.append(
            f"extrapolation: no calibration data for {int(gpus)} GPUs "
            f"(calibrated on {', '.join(str(int(g)) for g in sorted(seen_gpus))})"
        )
    return out
