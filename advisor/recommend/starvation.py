"""The GPU time jobs lose to too few cores per GPU, against a recommendation, with its interval.

One formula (:func:`starvation`), used by the partition recommendations and the monthly report:
a job row below the recommendation loses GPU-hours x (1 - slowdown(recommended) / slowdown(its
own cores per GPU)) at its own GPU count; the fix is (recommended x GPUs - CPUs) x its elapsed
hours. The slowdown is the most the wait allows (:func:`advisor.model.waitmodel.bound_array`: the
mechanism the bench measured) where the model file has a wait fit for the job's executor, else
the fitted TTFT curve. The same is evaluated with every bootstrap refit (the curve's, which
refit the demand too, or the wait fit's), so a group's lost GPU-hours come with a 90% interval
(:meth:`Starvation.gpu_hours_lost_interval`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from advisor.model import slowdown
from advisor.recommend.query import Workload, features_of

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

REFERENCE_WORKLOAD = Workload()  # every value the model's reference


@dataclass(frozen=True)
class Starvation:
    """What a group of jobs loses to too few cores per GPU against a recommendation."""

    below: np.ndarray  # per job row: its cores per GPU are under the recommendation
    lost_rows: np.ndarray  # per job row: the GPU-hours it loses
    fix_rows: np.ndarray  # per job row: the vCPU-hours that would lift it to the recommendation
    lost_rows_refits: np.ndarray  # (refits, rows): the same with each bootstrap refit

    @property
    def gpu_hours_lost(self) -> float:
        return float(np.sum(self.lost_rows))

    @property
    def fix_vcpu_hours(self) -> float:  # the missing cores x elapsed hours of the rows below
        return float(np.sum(self.fix_rows))

    def weighted(self, w: np.ndarray) -> Starvation:
        """The same with each row's loss scaled by ``w`` (e.g. the share of its GPU-hours the
        model still speaks for)."""
        return replace(
            self, lost_rows=self.lost_rows * w, lost_rows_refits=self.lost_rows_refits * w
        )

    def gpu_hours_lost_interval(
        self, rows: slice | np.ndarray | None = None
    ) -> tuple[float, float]:
        """5-95% of the lost GPU-hours of ``rows`` (all: None) over the refits, around the point
        value (the point itself twice when the fit has no refits)."""
        pick = slice(None) if rows is None else rows
        point = float(np.sum(self.lost_rows[pick]))
        if self.lost_rows_refits.shape[0] == 0:
            return point, point
        totals = np.sum(self.lost_rows_refits[:, pick], axis=1)
        return (
            min(float(np.quantile(totals, 0.05)), point),
            max(float(np.quantile(totals, 0.95)), point),
        )


def _wait_bounds(
    params: slowdown.CurveParams,
    X: np.ndarray,
    gpus: np.ndarray,
    group: np.ndarray,
    pairs: Sequence[tuple[float, str | None]],
    workload: Workload,
    s: np.ndarray,
    boots: np.ndarray,
) -> None:
    """Replace, in place, the curve's slowdown (``s``, and each refit's in ``boots``) by the
    wait's bound for the rows whose recommendation the wait model decides (a family the bench
    measured, an executor the wait fit covers: :func:`advisor.recommend.decision.decide`).
    ``group``: each row's index into ``pairs``, its (GPUs, platform)."""
    from advisor.model.prediction import evidence_for, job_demand
    from advisor.model.waitmodel import WaitFit, bound_array

    fit = WaitFit.from_json(params.meta.get("wait"))
    if fit is None:
        return
    for i_pair, (g, platform) in enumerate(pairs):
        f = features_of(platform, max(int(g), 1), workload)
        if evidence_for(params, f).level == "none":
            continue
        parts = job_demand(params, f).parts
        demand = {"api_server": parts.api_server_cores, "engine_core": parts.engine_core_cores}
        rows = group == i_pair
        cores = X[rows, 0] * gpus[rows]
        workers = f.gpus if f.executor == "mp" else 0
        kw = {"executor": f.executor, "workers": workers, "demand": demand, "cores": cores}
        point = bound_array(fit, **kw)
        if point is None:
            continue
        s[rows] = np.minimum(point, params.max_slowdown)
        for i in range(boots.shape[0]):
            refit = bound_array(fit, **kw, refit=i)
            boots[i, rows] = np.minimum(point if refit is None else refit, params.max_slowdown)


def starvation(
    params: slowdown.CurveParams,
    *,
    cpus: ArrayLike,
    gpus: ArrayLike,
    gpu_hours: ArrayLike,
    elapsed_s: ArrayLike,
    recommended_cores_per_gpu: ArrayLike,
    platform: str | None | Sequence[str | None],
    workload: Workload = REFERENCE_WORKLOAD,
) -> Starvation:
    """The GPU time lost to CPU starvation by job rows (CPUs, GPUs, GPU-hours, elapsed
    seconds each); see the module docstring. ``recommended_cores_per_gpu`` and ``platform`` are
    one for every row or one per row, so that many groups are judged in one evaluation."""
    cpus_a = np.asarray(cpus, dtype=float)
    gpus_a = np.asarray(gpus, dtype=float)
    cores = cpus_a / gpus_a
    rec = np.broadcast_to(np.asarray(recommended_cores_per_gpu, dtype=float), cores.shape)
    platforms = (
        [platform] * len(cores) if platform is None or isinstance(platform, str) else platform
    )
    # only the first feature (cores per GPU) differs between rows of one GPU count and platform:
    # one row per such pair, repeated, then the cores filled in
    pairs = list(zip(gpus_a.tolist(), platforms, strict=True))
    index = {k: i for i, k in enumerate(dict.fromkeys(pairs))}
    templates = np.array(
        [features_of(p, max(int(g), 1), workload).template for g, p in index]
    ).reshape(len(index), len(slowdown.FEATURES))
    X_job = templates[[index[k] for k in pairs]]
    X_job[:, 0] = cores
    X_rec = X_job.copy()
    X_rec[:, 0] = rec
    X = np.vstack([X_job, X_rec])
    n = len(cores)
    below = cores < rec

    def lost(s: np.ndarray) -> np.ndarray:
        s = np.minimum(s, params.max_slowdown)  # the display cap, as the point curve draws it
        frac = np.where(below, np.clip(1.0 - s[..., n:] / s[..., :n], 0.0, 1.0), 0.0)
        return np.asarray(gpu_hours, dtype=float) * frac

    # the job rows and the same rows at the recommendation, in one evaluation of the curve
    s, _ = slowdown.evaluate(params, X)
    boots = slowdown.bootstrap_curves(params, X)
    group = np.array([index[k] for k in pairs] * 2, dtype=int)
    _wait_bounds(
        params, X, np.concatenate([gpus_a, gpus_a]), group, list(index), workload, s, boots
    )
    deficit = rec * gpus_a - cpus_a
    elapsed_h = np.asarray(elapsed_s, dtype=float) / 3600.0
    return Starvation(
        below=below,
        lost_rows=lost(s),
        fix_rows=np.where(below, deficit * elapsed_h, 0.0),
        lost_rows_refits=lost(boots) if boots.shape[0] else np.empty((0, n)),
    )
