"""The TTFT-vs-cores model as a scikit-learn estimator: fitting, intervals, JSON round trip.

:class:`CoreSlowdownRegressor` predicts the slowdown of time-to-first-token against ample CPU
cores from a design matrix whose column 0 is cores per GPU and whose other columns are the
covariates (:data:`advisor.slowdown.FEATURES`: log2 GPUs, model size, load and prompt tokens
against references, platform offsets). The curve and its pathological region are described in
:mod:`advisor.slowdown`; this module only fits it:

- weighted least squares on log slowdowns (``scipy.optimize.least_squares``: minimises
  ``sum(w * r**2) + alpha * |covariate coefficients|**2 + k_alpha * |log-k offsets|**2``, so a
  row of weight 2 counts as two rows), with the ridge penalty ``alpha`` on the covariate
  coefficients so that a handful of published points cannot produce wild platform or load
  effects;
- ``k_by="platform"`` (the default) also gives each platform an offset of ``log k`` (ridge
  penalised like the others): the curve's height above its cliff differs by platform (the
  research's sharp Blackwell cliff against the gradual H200 TP=2 decline), which one shared
  ``k`` cannot fit; ``k_by="none"`` is the format-1 model with one ``k``;
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
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from advisor import slowdown

K_BY = ("platform", "none")


def k_columns(k_by: str, n_features: int) -> np.ndarray:
    """Covariate indices (0 = the first covariate, X column 1) whose log-k offset is fitted."""
    if k_by == "platform" and n_features == len(slowdown.FEATURES):
        return np.array([i - 1 for i, n in enumerate(slowdown.FEATURES) if n.startswith("platform=")],
                        dtype=int)
    return np.zeros(0, dtype=int)


def _unpack(p: np.ndarray, n_features: int, kcols: np.ndarray
            ) -> tuple[np.ndarray, float, np.ndarray]:
    """(theta, log_k, k_coef over every covariate) from the flat parameter vector."""
    theta, log_k = p[:n_features], float(p[n_features])
    k_coef = np.zeros(n_features - 1)
    k_coef[kcols] = p[n_features + 1:]
    return theta, log_k, k_coef


def _residuals(
    p: np.ndarray,
    X: np.ndarray,
    log_y: np.ndarray,
    censored: np.ndarray,
    sqrt_w: np.ndarray,
    alpha: float,
    k_alpha: float,
    max_slowdown: float,
    censored_weight: float,
    pole_exponent: float,
    kcols: np.ndarray,
) -> np.ndarray:
    theta, log_k, k_coef = _unpack(p, X.shape[1], kcols)
    pred, _ = slowdown.curve(theta, log_k, max_slowdown, X, pole_exponent, k_coef)
    r = np.log(pred) - log_y
    r = sqrt_w * np.where(censored, math.sqrt(censored_weight) * np.minimum(r, 0.0), r)
    ridge = np.concatenate([math.sqrt(alpha) * theta[1:], math.sqrt(k_alpha) * p[X.shape[1] + 1:]])
    return np.concatenate([r, ridge])


def _start(X: np.ndarray, kcols: np.ndarray) -> np.ndarray:
    cores = X[:, 0]
    positive = cores[cores > 0]
    low = float(positive.min()) if positive.size else 1.0
    theta = np.zeros(X.shape[1])
    theta[0] = math.log(0.25 * low)  # start well outside the pathological region
    return np.concatenate([theta, [0.0], np.zeros(len(kcols))])


def _fit_once(
    X: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    alpha: float,
    k_alpha: float,
    max_slowdown: float,
    censored_weight: float,
    pole_exponent: float,
    kcols: np.ndarray,
    start: np.ndarray | None = None,
) -> np.ndarray:
    censored = y >= max_slowdown
    log_y = np.log(np.minimum(y, max_slowdown))
    keep = w > 0  # a zero weight is the same as leaving the row out
    X, log_y, censored, w = X[keep], log_y[keep], censored[keep], w[keep]
    x0 = _start(X, kcols) if start is None else start
    result = least_squares(
        _residuals,
        x0,
        args=(X, log_y, censored, np.sqrt(w), alpha, k_alpha, max_slowdown, censored_weight,
              pole_exponent, kcols),
        method="trf",
        x_scale=1.0,
        max_nfev=2000,
    )
    p = np.asarray(result.x, dtype=float)
    n = X.shape[1]
    p[n] = float(np.clip(p[n], -20.0, 20.0))
    p[n + 1:] = np.clip(p[n + 1:], -20.0, 20.0)
    return p


class CoreSlowdownRegressor(RegressorMixin, BaseEstimator):
    """Slowdown of TTFT against ample cores, monotone non-increasing in cores per GPU.

    Parameters
    ----------
    alpha : ridge penalty on the covariate coefficients (log-demand per log2 unit).
    max_slowdown : the slowdown reported in the pathological region (CPU demand at or above the
        cores given); targets at or above it are censored (timed out). 25 is the research's
        200 s timeout over its ~8 s ample-core task time.
    censored_weight : weight of the censored (timed-out) points (times their sample weight).
    pole_exponent : how sharp the cliff at the CPU demand is (``q`` in
        ``1 + k rho / (1 - rho)**q``; 1 is M/M/1). 2 by leave-one-out on the published points.
    k_by : ``"platform"``: each platform column of :data:`advisor.slowdown.FEATURES` also
        shifts ``log k`` (when X has exactly those columns); ``"none"``: one shared ``k``.
    k_alpha : ridge penalty on the log-k offsets (0.1: a prior spread of about 3 in log k,
        as loosely pinned as k itself is by the published points).
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
        k_by: str = "platform",
        k_alpha: float = 0.1,
        n_bootstrap: int = 50,
        interval: float = 0.9,
        random_state: int | None = None,
    ) -> None:
        self.alpha = alpha
        self.max_slowdown = max_slowdown
        self.censored_weight = censored_weight
        self.pole_exponent = pole_exponent
        self.k_by = k_by
        self.k_alpha = k_alpha
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
        if not self.k_alpha >= 0:
            raise ValueError(f"k_alpha must be >= 0, got {self.k_alpha}")
        if self.k_by not in K_BY:
            raise ValueError(f"k_by must be one of {K_BY}, got {self.k_by!r}")
        if int(self.n_bootstrap) < 0:
            raise ValueError(f"n_bootstrap must be >= 0, got {self.n_bootstrap}")

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> CoreSlowdownRegressor:
        """Fit on X (column 0: cores per GPU; the rest: covariates) and y (slowdown >= 1).

        ``sample_weight`` (optional, >= 0) weighs each row's squared log residual, read as a
        relative precision: ``sigma_log_`` is the spread of a row of weight 1.
        :func:`advisor.calibration.training_set` gives each row its weight (one per series).
        """
        self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True)
        X = np.asarray(X, dtype=float)
        y = np.maximum(np.asarray(y, dtype=float), 1.0)  # faster than ample is noise around 1
        w_raw = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                     ensure_non_negative=True)
        if not w_raw.sum() > 0:
            raise ValueError("sample_weight sums to zero")
        w = w_raw
        kcols = k_columns(self.k_by, X.shape[1])
        n = X.shape[1]
        p = _fit_once(X, y, w, self.alpha, self.k_alpha, self.max_slowdown, self.censored_weight,
                      self.pole_exponent, kcols)
        self.theta_, self.log_k_, self.k_coef_ = _unpack(p, n, kcols)
        unused = ~np.any(X[:, 1:] != 0, axis=0)  # a covariate never seen has no k offset
        self.k_coef_[unused] = 0.0
        pred, _ = slowdown.curve(self.theta_, self.log_k_, self.max_slowdown, X,
                                 self.pole_exponent, self.k_coef_)
        seen = (y < self.max_slowdown) & (w_raw > 0)
        resid = np.log(pred[seen]) - np.log(y[seen])
        # Weighted least squares' residual variance: the weights are read as relative precisions,
        # so sigma_log is the spread of one observation of sample weight 1 (a row of weight w
        # has spread sigma_log / sqrt(w)). Without weights: the plain residual spread.
        dof = max(int(seen.sum()) - 2, 1)
        self.sigma_log_ = (float(math.sqrt(float(np.sum(w_raw[seen] * resid**2)) / dof))
                           if seen.any() else 0.0)
        rng = check_random_state(self.random_state)
        thetas, log_ks, k_coefs = [], [], []
        rows = X.shape[0]
        for _ in range(int(self.n_bootstrap)):
            idx = rng.randint(0, rows, size=rows)
            if not w[idx].sum() > 0:
                idx = np.arange(rows)
            pb = _fit_once(X[idx], y[idx], w[idx], self.alpha, self.k_alpha, self.max_slowdown,
                           self.censored_weight, self.pole_exponent, kcols, p)
            tb, lkb, kcb = _unpack(pb, n, kcols)
            thetas.append(tb)
            log_ks.append(lkb)
            k_coefs.append(kcb)
        self.bootstrap_theta_ = np.array(thetas).reshape(len(thetas), n)
        self.bootstrap_log_k_ = np.array(log_ks)
        self.bootstrap_k_coef_ = np.array(k_coefs).reshape(len(k_coefs), n - 1)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Point prediction of the slowdown (``max_slowdown`` in the pathological region)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return slowdown.curve(self.theta_, self.log_k_, self.max_slowdown, X,
                              self.pole_exponent, self.k_coef_)[0]

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
                              self.pole_exponent, self.k_coef_)[1]

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
            k_coef=tuple(float(v) for v in self.k_coef_),
            bootstrap_k_coef=tuple(tuple(float(v) for v in t) for t in self.bootstrap_k_coef_),
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
        n_cov = len(params.theta) - 1
        est.k_coef_ = (np.asarray(params.k_coef, dtype=float) if params.k_coef
                       else np.zeros(n_cov))
        est.bootstrap_k_coef_ = (
            np.asarray(params.bootstrap_k_coef, dtype=float).reshape(-1, n_cov)
            if params.k_coef else np.zeros((len(params.bootstrap_theta), n_cov)))
        est.k_by = "platform" if np.any(est.k_coef_) else "none"
        est.n_features_in_ = len(params.theta)
        return est
