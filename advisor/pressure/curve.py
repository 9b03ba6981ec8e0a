"""The measured pressure curve: per group (cluster, partition, GPU type and GPUs per job by
default) and whole cores per GPU, the GPU-hour weighted stall share of the measured jobs with
its interval from resampling jobs, and how many jobs measured it
(``advisor/sql/pressure/curve_jobs.sql``; docs/pressure.md, "Measured curves").

A cell is *enough* to decide from when it holds at least :data:`MIN_JOBS` measured jobs and
their GPU-hours are not held by a few of them (Kish's effective number of jobs, the squared
sum of GPU-hours over the sum of their squares, at least :data:`MIN_EFFECTIVE_JOBS`): with
fewer, one long job is the whole cell and resampling jobs cannot say how far another month's
would fall. Its stall is *under* a threshold beyond doubt when the interval's upper end is
below it, *over* when the lower end is at or above it, else *unresolved*.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from advisor.derived.usage_months import UsageThresholds, facts_params, facts_sql
from advisor.errors import UsageError
from advisor.filters import JobFilters
from advisor.model.psilink import STARVED_PSI_DEFAULT
from advisor.store import connect, quote_ident, render

CURVE_KEYS: tuple[str, ...] = ("cluster", "partition", "gpu_type", "gpu_count")
ALLOWED_KEYS: tuple[str, ...] = (*CURVE_KEYS, "account", "user", "month")
MIN_JOBS = 20
MIN_EFFECTIVE_JOBS = 10.0
BOOTSTRAP = 200
INTERVAL = 0.90
# above this many jobs a cell's resampled weighted mean is normal to well within its width
# (tests/test_measured.py compares the two at 5,000 jobs), and the linearised (delta-method)
# interval replaces 200 resamples of every job: at 70,000 measured jobs they took 1.3 s of 1.6
EXACT_BOOTSTRAP_MAX = 2_000


@dataclass(frozen=True)
class CurveQuery(JobFilters):
    """Which measured jobs, grouped how, against which stall threshold."""

    by: tuple[str, ...] = CURVE_KEYS
    threshold: float = STARVED_PSI_DEFAULT
    seed: int = 0
    # the full share's interval too (the decision reads only some's: recommend leaves it out)
    full_interval: bool = True


@dataclass(frozen=True)
class CurveCell:
    """One group at one whole number of cores per GPU."""

    group: tuple[Any, ...]
    cores_per_gpu: int
    jobs: int
    gpu_hours: float
    effective_jobs: float
    some_share: float
    some_low: float
    some_high: float
    full_share: float | None
    full_low: float | None
    full_high: float | None
    enough: bool
    verdict: str  # under, over, unresolved (against the threshold), or too few

    def to_row(self, by: tuple[str, ...]) -> dict[str, Any]:
        return {
            **dict(zip(by, self.group, strict=True)),
            **{k: v for k, v in self.__dict__.items() if k != "group"},
        }


@dataclass(frozen=True)
class PressureCurve:
    """Every cell of every group, in group order then cores per GPU."""

    by: tuple[str, ...]
    threshold: float
    cells: tuple[CurveCell, ...]
    groups: dict[tuple[Any, ...], tuple[CurveCell, ...]] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        return [c.to_row(self.by) for c in self.cells]


def _interval(w: np.ndarray, s: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """The 90% interval of the weighted mean of ``s`` over jobs drawn with replacement."""
    tail = (1 - INTERVAL) / 2
    n = len(w)
    if n == 1:
        return float(s[0]), float(s[0])
    if n <= EXACT_BOOTSTRAP_MAX:
        pick = rng.integers(0, n, size=(BOOTSTRAP, n))
        den = w[pick].sum(axis=1)
        num = (w * s)[pick].sum(axis=1)
        means = num[den > 0] / den[den > 0]
        return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))
    mean = float(np.sum(w * s) / np.sum(w))
    resid = w * (s - mean) / np.mean(w)
    se = float(np.sqrt(np.sum(resid**2)) / n)
    z = 1.6448536269514722  # the normal's 95% point: a two-sided 90% interval
    return max(mean - z * se, 0.0), min(mean + z * se, 1.0)


def _verdict(enough: bool, low: float, high: float, threshold: float) -> str:
    if not enough:
        return "too few"
    if high < threshold:
        return "under"
    if low >= threshold:
        return "over"
    return "unresolved"


def cell_of(
    group: tuple[Any, ...],
    cores: int,
    w: np.ndarray,
    some: np.ndarray,
    full: np.ndarray,
    threshold: float,
    rng: np.random.Generator,
    full_interval: bool = True,
) -> CurveCell:
    """One cell from its jobs' GPU-hours and stall shares (``full`` NaN where not measured)."""
    eff = float(np.sum(w) ** 2 / np.sum(w**2))
    enough = len(w) >= MIN_JOBS and eff >= MIN_EFFECTIVE_JOBS
    s_mid = float(np.sum(w * some) / np.sum(w))
    s_lo, s_hi = _interval(w, some, rng)
    has_full = ~np.isnan(full)
    f_mid = f_lo = f_hi = None
    if has_full.any():
        wf, ff = w[has_full], full[has_full]
        f_mid = float(np.sum(wf * ff) / np.sum(wf))
        f_lo, f_hi = _interval(wf, ff, rng) if full_interval else (None, None)
    return CurveCell(
        group, cores, len(w), float(np.sum(w)), eff, s_mid, s_lo, s_hi, f_mid, f_lo, f_hi,
        enough, _verdict(enough, s_lo, s_hi, threshold),
    )  # fmt: skip


def curve_of(con: duckdb.DuckDBPyConnection, q: CurveQuery) -> PressureCurve:
    """The measured curve of the database behind ``con`` (see the module docstring)."""
    bad = [k for k in q.by if k not in ALLOWED_KEYS]
    if bad:
        raise UsageError(f"--by {','.join(bad)}: choose from {', '.join(ALLOWED_KEYS)}")
    if not 0 < q.threshold <= 1:
        raise UsageError(f"--starved-psi {q.threshold}: a share of time in (0, 1], e.g. 0.075")
    keys = "".join(f"{quote_ident(k)}, " for k in q.by)
    sql = render("pressure/curve_jobs", facts=facts_sql(), keys=keys, order=keys)
    t = UsageThresholds(starved_psi_some=q.threshold)
    arrays = con.execute(sql, facts_params(q, t)).fetchnumpy()
    cores = np.asarray(arrays["cores_per_gpu"], dtype=np.int64)
    w = np.asarray(arrays["gpu_hours"], dtype=float)
    some = np.asarray(arrays["some_share"], dtype=float)
    full: np.ndarray = np.ma.filled(np.ma.asarray(arrays["full_share"], dtype=float), np.nan)
    keycols = [np.asarray(arrays[k], dtype=object) for k in q.by]
    rng = np.random.default_rng(q.seed)
    cells: list[CurveCell] = []
    # rows arrive ordered by group then cores: each run of equal keys is a cell
    edges = (np.flatnonzero(_changes([*keycols, cores])) + 1).tolist() if len(w) else []
    bounds = [0, *edges, len(w)] if len(w) else []
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        part = slice(start, stop)
        cells.append(
            cell_of(
                tuple(_plain(col[start]) for col in keycols),
                int(cores[start]),
                w[part],
                some[part],
                full[part],
                q.threshold,
                rng,
                q.full_interval,
            )  # fmt: skip
        )
    groups: dict[tuple[Any, ...], list[CurveCell]] = {}
    for c in cells:
        groups.setdefault(c.group, []).append(c)
    return PressureCurve(q.by, q.threshold, tuple(cells), {k: tuple(v) for k, v in groups.items()})


def _changes(cols: list[np.ndarray]) -> np.ndarray:
    """Where a row differs from the next in any column (NULL equal to NULL)."""
    import pandas as pd

    out = np.zeros(max(len(cols[0]) - 1, 0), dtype=bool)
    for col in cols:
        filled = pd.Series(col).fillna("\x00NULL").to_numpy()
        out |= filled[:-1] != filled[1:]
    return out


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def pressure_curve(
    db: str | os.PathLike[str] | None, q: CurveQuery = CurveQuery()
) -> PressureCurve:
    """:func:`curve_of` of the database file ``db``, opened read-only."""
    con = connect(db, read_only=True)
    try:
        return curve_of(con, q)
    finally:
        con.close()
