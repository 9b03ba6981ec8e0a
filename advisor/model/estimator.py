"""The TTFT-vs-cores model as a scikit-learn estimator: fitting the mechanism, its bootstrap,
and the JSON round trip.

:class:`CoreSlowdownRegressor` fits the seven parameters of :mod:`advisor.model.slowdown`'s mechanism
(API server, engine core, busy-waiting workers, how CPU-bound a request is) on a design matrix
of :data:`advisor.model.slowdown.FEATURES`. Each row's target is a slowdown of TTFT against its
reference cores, or a process's measured CPU cores (the ``target`` column), so that the
per-process CPU the bench measures pins the demand's parts directly:

- weighted least squares on log targets (``scipy.optimize.least_squares``), minimising
  ``sum(w * r**2) + alpha * |log(params / prior)|**2``: a ridge towards the prior (vLLM's
  2 + N rule) that the data may move, so that a handful of points cannot produce wild values;
- a slowdown row at or above ``max_slowdown`` is *censored* (a run that timed out): it only
  asks the curve to be at least that slow there, weighted by ``censored_weight``;
- where the mechanism says *pathological* (demand at or above the cores), the fit sees
  ``log(max_slowdown)`` plus the overload, so that a finished run there pulls the demand
  below its cores;
- ``n_bootstrap`` refits on resampled groups (``groups``: one per measured series, so that
  the interval is the spread between configurations, not between repeats of one) give the
  interval of every prediction.

Predictions go through :func:`advisor.model.slowdown.mechanism`, the numpy-only function that the
recommend path uses with the same parameters loaded from JSON (never pickle).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import least_squares
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from advisor.model import slowdown

_LOG_PRIOR = np.log(np.asarray(slowdown.PRIOR))


def _log_fit_values(theta: np.ndarray, X: np.ndarray, cap: float, q: float) -> np.ndarray:
    """log of each row's predicted target; smooth past the pathological edge (see module doc)."""
    values = np.exp(theta)
    m = slowdown.mechanism(values, X, q)
    cols = slowdown._columns(X)
    kind = cols["target"]
    over = np.maximum(
        np.maximum(m.demand_cores / cols["cores"], m.tokenizer_utilisation) - 1.0, 0.0
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        slow = np.where(
            m.pathological, math.log(cap) + over, np.log(np.clip(m.slowdown, 1e-9, cap))
        )
        cpu = np.select(
            [kind == 1, kind == 2, kind == 3],
            [m.api_server_cores, m.engine_core_cores, m.worker_cores],
            1.0,
        )
        log_cpu = np.log(np.maximum(cpu, 1e-9))
    return np.where(kind == 0, slow, log_cpu)


def _residuals(
    theta: np.ndarray,
    X: np.ndarray,
    log_y: np.ndarray,
    censored: np.ndarray,
    sqrt_w: np.ndarray,
    alpha: float,
    cap: float,
    censored_weight: float,
    q: float,
) -> np.ndarray:
    r = _log_fit_values(theta, X, cap, q) - log_y
    r = sqrt_w * np.where(censored, math.sqrt(censored_weight) * np.minimum(r, 0.0), r)
    return np.concatenate([r, math.sqrt(alpha) * (theta - _LOG_PRIOR)])


def collapse_rows(
    X: np.ndarray, y: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Identical (row, target) pairs as one row carrying their summed weight, in sorted order,
    zero weights dropped: the objective is the same, and a row of weight k and k copies of it
    (in any order) reach the optimiser as the same arrays, so the fit is exactly
    weight-equivalent on any processor (scikit-learn's sample-weight check) instead of
    depending on where a floating-point sum of reordered rows stops the optimiser."""
    keep = w > 0  # a zero weight is the same as leaving the row out
    rows = np.column_stack([X[keep], y[keep]])
    if len(rows) == 0:
        return X[keep], y[keep], w[keep]
    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    summed = np.bincount(np.ravel(inverse), weights=w[keep], minlength=len(uniq))
    return uniq[:, :-1], uniq[:, -1], summed


def fit_values(
    X: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    *,
    alpha: float,
    max_slowdown: float,
    censored_weight: float,
    pole_exponent: float,
    start: np.ndarray | None = None,
    fixed: np.ndarray | None = None,
) -> np.ndarray:
    """The fitted parameters (natural units) of one weighted least-squares fit; parameters
    where ``fixed`` (a boolean mask) is true stay at ``start`` (e.g. the demand's, fitted on
    measured CPU)."""
    X, y, w = collapse_rows(X, y, w)
    kind = slowdown._columns(X)["target"]
    censored = (kind == 0) & (y >= max_slowdown)
    log_y = np.log(np.clip(np.where(kind == 0, np.minimum(y, max_slowdown), y), 1e-6, None))
    x0 = _LOG_PRIOR.copy() if start is None else np.log(np.asarray(start, dtype=float))
    free = np.ones(len(x0), dtype=bool) if fixed is None else ~np.asarray(fixed, dtype=bool)
    if not free.any():
        return np.exp(x0)
    args = (X, log_y, censored, np.sqrt(w), alpha, max_slowdown, censored_weight, pole_exponent)

    def residuals(theta_free: np.ndarray) -> np.ndarray:
        theta = x0.copy()
        theta[free] = theta_free
        return _residuals(theta, *args)

    result = least_squares(
        residuals,
        np.clip(x0[free], _LOG_PRIOR[free] - 7.9, _LOG_PRIOR[free] + 7.9),
        method="trf",
        bounds=(_LOG_PRIOR[free] - 8.0, _LOG_PRIOR[free] + 8.0),
        max_nfev=1000,
        xtol=1e-12,
        ftol=1e-12,
        gtol=1e-12,
        jac="3-point",
    )
    theta = x0.copy()
    theta[free] = np.asarray(result.x, dtype=float)
    return np.exp(theta)


class CoreSlowdownRegressor(RegressorMixin, BaseEstimator):
    """Slowdown of TTFT against ample (or reference) cores from the CPU-starvation mechanism.

    Parameters
    ----------
    alpha : ridge penalty pulling the log-parameters towards :data:`advisor.model.slowdown.PRIOR`.
    max_slowdown : slowdown targets at or above it are censored (timed-out runs); it is also
        the value drawn (flagged) in the pathological region.
    censored_weight : weight of the censored (timed-out) points (times their sample weight).
    pole_exponent : ``q`` in ``1 + k W**q`` (1: the queue's own wait).
    n_bootstrap : refits on resampled groups (or rows) for the interval (0: none).
    interval : the central probability of the interval, e.g. 0.9.
    random_state : seed of the bootstrap.
    """

    def __init__(
        self,
        alpha: float = 0.1,
        max_slowdown: float = slowdown.DISPLAY_CAP,
        censored_weight: float = 0.01,
        pole_exponent: float = slowdown.DEFAULT_POLE_EXPONENT,
        n_bootstrap: int = 50,
        interval: float = 0.9,
        random_state: int | None = None,
    ) -> None:
        self.alpha = alpha
        self.max_slowdown = max_slowdown
        self.censored_weight = censored_weight
        self.pole_exponent = pole_exponent
        self.n_bootstrap = n_bootstrap
        self.interval = interval
        self.random_state = random_state

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # Six physical parameters with a prior: it does not chase arbitrary targets.
        tags.regressor_tags.poor_score = True
        return tags

    def _check_params(self) -> None:
        if not self.alpha >= 0:
            raise ValueError(f"alpha must be >= 0, got {self.alpha}")
        if not self.max_slowdown > 1:
            raise ValueError(f"max_slowdown must be > 1, got {self.max_slowdown}")
        if not self.pole_exponent > 0:
            raise ValueError(f"pole_exponent must be > 0, got {self.pole_exponent}")
        if not 0 < self.interval < 1:
            raise ValueError(f"interval must be in (0, 1), got {self.interval}")
        if int(self.n_bootstrap) < 0:
            raise ValueError(f"n_bootstrap must be >= 0, got {self.n_bootstrap}")

    def _fit_values(
        self, X: np.ndarray, y: np.ndarray, w: np.ndarray, start: np.ndarray | None = None
    ) -> np.ndarray:
        return fit_values(
            X,
            y,
            w,
            alpha=self.alpha,
            max_slowdown=self.max_slowdown,
            censored_weight=self.censored_weight,
            pole_exponent=self.pole_exponent,
            start=start,
        )

    def fit(
        self, X: Any, y: Any, sample_weight: Any = None, groups: Any = None
    ) -> CoreSlowdownRegressor:
        """Fit on X (:data:`advisor.model.slowdown.FEATURES`; missing trailing columns take their
        defaults) and y (slowdown against the reference cores, or measured CPU cores).

        ``sample_weight`` (optional, >= 0) weighs each row's squared log residual;
        ``groups`` (optional, one label per row: the measured series) makes the bootstrap
        resample whole groups.
        """
        self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True)
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if not w.sum() > 0:
            raise ValueError("sample_weight sums to zero")
        self.values_ = self._fit_values(X, y, w)
        log_fit = _log_fit_values(np.log(self.values_), X, self.max_slowdown, self.pole_exponent)
        kind = slowdown._columns(X)["target"]
        seen = (kind == 0) & (y < self.max_slowdown) & (y > 0) & (w > 0)
        resid = log_fit[seen] - np.log(y[seen])
        # The weighted residual spread (a series weighs its weight); fit_model replaces it
        # with the spread of held-out series, the honest one for a new configuration.
        self.sigma_log_ = (
            float(math.sqrt(float(np.sum(w[seen] * resid**2)) / float(np.sum(w[seen]))))
            if seen.any()
            else 0.0
        )
        rng = check_random_state(self.random_state)
        labels = np.arange(len(y)) if groups is None else np.asarray(groups)
        uniq = np.unique(labels)
        boots = []
        for _ in range(int(self.n_bootstrap)):
            pick = uniq[rng.randint(0, len(uniq), size=len(uniq))]
            idx = np.concatenate([np.flatnonzero(labels == g) for g in pick])
            if not w[idx].sum() > 0:
                idx = np.arange(len(y))
            boots.append(self._fit_values(X[idx], y[idx], w[idx], start=self.values_))
        self.bootstrap_values_ = np.array(boots).reshape(len(boots), len(slowdown.PARAM_NAMES))
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Each row's target: the slowdown (``max_slowdown`` where pathological, flagged by
        :meth:`pathological`), or a process's CPU cores."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        out, _ = slowdown.target_values(self.values_, X, self.pole_exponent)
        return np.minimum(out, self.max_slowdown)

    def predict_interval(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) of every slowdown prediction; high is inf in the pathological region."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        pred = slowdown.predict(self.to_params(), X)
        return pred.low, pred.high

    def pathological(self, X: Any) -> np.ndarray:
        """True where the CPU demand is at or above the cores (or the tokenizer saturated)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return slowdown.mechanism(self.values_, X, self.pole_exponent).pathological

    def to_params(self, meta: dict[str, Any] | None = None) -> slowdown.CurveParams:
        """The fitted parameters as plain data (what :func:`advisor.model.slowdown.save_params`
        writes)."""
        check_is_fitted(self)
        return slowdown.CurveParams(
            values=tuple(float(v) for v in self.values_),
            max_slowdown=float(self.max_slowdown),
            sigma_log=float(self.sigma_log_),
            interval=float(self.interval),
            pole_exponent=float(self.pole_exponent),
            bootstrap_values=tuple(tuple(float(v) for v in t) for t in self.bootstrap_values_),
            meta=dict(meta or {}),
        )

    @classmethod
    def from_params(cls, params: slowdown.CurveParams) -> CoreSlowdownRegressor:
        """A fitted estimator rebuilt from plain parameters (e.g. loaded from JSON)."""
        est = cls(
            max_slowdown=params.max_slowdown,
            interval=params.interval,
            pole_exponent=params.pole_exponent,
            n_bootstrap=len(params.bootstrap_values),
        )
        est.values_ = np.asarray(params.values, dtype=float)
        est.sigma_log_ = float(params.sigma_log)
        est.bootstrap_values_ = np.asarray(params.bootstrap_values, dtype=float).reshape(
            len(params.bootstrap_values), len(slowdown.PARAM_NAMES)
        )
        est.n_features_in_ = len(slowdown.FEATURES)
        return est
