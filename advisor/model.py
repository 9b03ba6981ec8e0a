"""The TTFT-vs-cores model as a scikit-learn estimator: fitting, intervals, JSON round trip.

:class:`CoreSlowdownRegressor` predicts the slowdown of time-to-first-token against ample CPU
cores from a design matrix whose column 0 is cores per GPU and whose other columns are the
covariates (:data:`advisor.slowdown.FEATURES`: log2 GPUs, model size, load and prompt tokens
against references, platform offsets). The curve and its pathological region are described in
:mod:`advisor.slowdown`; this module only fits it:

- least squares on log slowdowns (``scipy.optimize.least_squares``), with a ridge penalty
  ``alpha`` on the covariate coefficients so that a handful of published points cannot
  produce wild platform or load effects;
- a target at or above ``max_slowdown`` is *censored* (a run that timed out): it only asks
  the curve to be at least that slow there, weighted by ``censored_weight``;
- ``n_bootstrap`` case-resampled refits (seeded by ``random_state``) plus the residual spread
  give the interval of every prediction.

Predictions go through :func:`advisor.slowdown.curve`, the numpy-only function that the
recommend path uses with the same parameters loaded from JSON (never pickle).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import least_squares
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from advisor import slowdown


def _residuals(
    p: np.ndarray,
    X: np.ndarray,
    log_y: np.ndarray,
    censored: np.ndarray,
    alpha: float,
    max_slowdown: float,
    censored_weight: float,
    pole_exponent: float,
) -> np.ndarray:
    theta, log_k = p[:-1], p[-1]
    pred, _ = slowdown.curve(theta, log_k, max_slowdown, X, pole_exponent)
    r = np.log(pred) - log_y
    r = np.where(censored, math.sqrt(censored_weight) * np.minimum(r, 0.0), r)
    ridge = math.sqrt(alpha) * theta[1:]
    return np.concatenate([r, ridge])


def _start(X: np.ndarray) -> np.ndarray:
    cores = X[:, 0]
    positive = cores[cores > 0]
    low = float(positive.min()) if positive.size else 1.0
    theta = np.zeros(X.shape[1])
    theta[0] = math.log(0.25 * low)  # start well outside the pathological region
    return np.concatenate([theta, [0.0]])


def _fit_once(
    X: np.ndarray,
    y: np.ndarray,
    alpha: float,
    max_slowdown: float,
    censored_weight: float,
    pole_exponent: float,
    start: np.ndarray | None = None,
) -> np.ndarray:
    censored = y >= max_slowdown
    log_y = np.log(np.minimum(y, max_slowdown))
    x0 = _start(X) if start is None else start
    result = least_squares(
        _residuals,
        x0,
        args=(X, log_y, censored, alpha, max_slowdown, censored_weight, pole_exponent),
        method="trf",
        x_scale=1.0,
        max_nfev=2000,
    )
    p = np.asarray(result.x, dtype=float)
    p[-1] = float(np.clip(p[-1], -20.0, 20.0))
    return p


class CoreSlowdownRegressor(RegressorMixin, BaseEstimator):
    """Slowdown of TTFT against ample cores, monotone non-increasing in cores per GPU.

    Parameters
    ----------
    alpha : ridge penalty on the covariate coefficients (log-demand per log2 unit).
    max_slowdown : the slowdown reported in the pathological region (CPU demand at or above the
        cores given); targets at or above it are censored (timed out). 25 is the research's
        200 s timeout over its ~8 s ample-core task time.
    censored_weight : weight of the censored (timed-out) points.
    pole_exponent : how sharp the cliff at the CPU demand is (``q`` in
        ``1 + k rho / (1 - rho)**q``; 1 is M/M/1). 2 by leave-one-out on the published points.
    n_bootstrap : case-resampled refits for the interval (0: residual spread only).
    interval : the central probability of the interval, e.g. 0.9.
    random_state : seed of the bootstrap.
    """

    def __init__(
        self,
        alpha: float = 1.0,
        max_slowdown: float = 25.0,
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
        # A two-parameter saturating law with a ridge prior: it does not chase arbitrary targets.
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

    def fit(self, X: Any, y: Any) -> CoreSlowdownRegressor:
        """Fit on X (column 0: cores per GPU; the rest: covariates) and y (slowdown >= 1)."""
        self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True)
        X = np.asarray(X, dtype=float)
        y = np.maximum(np.asarray(y, dtype=float), 1.0)  # faster than ample is noise around 1
        p = _fit_once(X, y, self.alpha, self.max_slowdown, self.censored_weight,
                      self.pole_exponent)
        self.theta_ = p[:-1]
        self.log_k_ = float(p[-1])
        pred, _ = slowdown.curve(self.theta_, self.log_k_, self.max_slowdown, X,
                                 self.pole_exponent)
        seen = y < self.max_slowdown
        resid = np.log(pred[seen]) - np.log(y[seen])
        dof = max(int(seen.sum()) - 2, 1)
        self.sigma_log_ = float(math.sqrt(float(np.sum(resid**2)) / dof)) if seen.any() else 0.0
        rng = check_random_state(self.random_state)
        thetas, log_ks = [], []
        n = X.shape[0]
        for _ in range(int(self.n_bootstrap)):
            idx = rng.randint(0, n, size=n)
            pb = _fit_once(X[idx], y[idx], self.alpha, self.max_slowdown, self.censored_weight,
                           self.pole_exponent, p)
            thetas.append(pb[:-1])
            log_ks.append(float(pb[-1]))
        self.bootstrap_theta_ = np.array(thetas).reshape(len(thetas), X.shape[1])
        self.bootstrap_log_k_ = np.array(log_ks)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Point prediction of the slowdown (``max_slowdown`` in the pathological region)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return slowdown.curve(self.theta_, self.log_k_, self.max_slowdown, X,
                              self.pole_exponent)[0]

    def predict_interval(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) of every prediction; high is inf in the pathological region."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        pred = slowdown.predict(self.to_params(), X)
        return pred.low, pred.high

    def pathological(self, X: Any) -> np.ndarray:
        """True where the CPU demand is at or above the cores given (timeouts, unbounded queues)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return slowdown.curve(self.theta_, self.log_k_, self.max_slowdown, X,
                              self.pole_exponent)[1]

    def to_params(self, meta: dict[str, Any] | None = None) -> slowdown.CurveParams:
        """The fitted parameters as plain data (what :func:`advisor.slowdown.save_params` writes)."""
        check_is_fitted(self)
        names = (
            slowdown.FEATURES
            if self.n_features_in_ == len(slowdown.FEATURES)
            else tuple(f"x{i}" for i in range(self.n_features_in_))
        )
        return slowdown.CurveParams(
            theta=tuple(float(v) for v in self.theta_),
            log_k=self.log_k_,
            max_slowdown=float(self.max_slowdown),
            sigma_log=self.sigma_log_,
            interval=float(self.interval),
            pole_exponent=float(self.pole_exponent),
            bootstrap_theta=tuple(tuple(float(v) for v in t) for t in self.bootstrap_theta_),
            bootstrap_log_k=tuple(float(v) for v in self.bootstrap_log_k_),
            feature_names=names,
            meta=dict(meta or {}),
        )

    @classmethod
    def from_params(cls, params: slowdown.CurveParams) -> CoreSlowdownRegressor:
        """A fitted estimator rebuilt from plain parameters (e.g. loaded from JSON)."""
        est = cls(max_slowdown=params.max_slowdown, interval=params.interval,
                  pole_exponent=params.pole_exponent, n_bootstrap=len(params.bootstrap_theta))
        est.theta_ = np.asarray(params.theta, dtype=float)
        est.log_k_ = float(params.log_k)
        est.sigma_log_ = float(params.sigma_log)
        est.bootstrap_theta_ = np.asarray(params.bootstrap_theta, dtype=float).reshape(
            len(params.bootstrap_theta), len(params.theta)
        )
        est.bootstrap_log_k_ = np.asarray(params.bootstrap_log_k, dtype=float)
        est.n_features_in_ = len(params.theta)
        return est
