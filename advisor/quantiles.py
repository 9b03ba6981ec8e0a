"""The job-weighted percentile: one definition for every module that reports one.

A value seen ``n`` times counts ``n`` times, and the q-quantile interpolates linearly between
order statistics, as ``numpy.percentile(np.repeat(values, counts), 100 * q)`` (numpy's default
"linear" method, DuckDB's ``quantile_cont``), computed from the counts without expanding them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def grouped_job_percentiles(
    values: npt.NDArray[np.float64],
    counts: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    quantiles: Sequence[float],
) -> npt.NDArray[np.float64]:
    """Per group, the job-weighted ``quantiles`` (0..1) of ``values`` repeated ``counts`` times:
    one row per group, one column per quantile. Groups are consecutive runs of rows starting at
    ``starts``, each with its values ascending and at least one count."""
    size = len(starts)
    pct = np.full((size, len(quantiles)), np.nan)
    if size == 0:
        return pct
    rows = len(values)
    ends = np.append(starts[1:], rows).astype(np.int64)
    run_n = np.cumsum(counts)  # running totals over all rows: a group's are these less its base
    jobs = np.add.reduceat(counts, starts)
    base = run_n[starts] - counts[starts]
    with np.errstate(invalid="ignore"):
        for j, q in enumerate(quantiles):
            h = (jobs - 1).astype(np.float64) * q
            k = np.floor(h)
            target = base + k.astype(np.int64)
            # lo: the first value whose running count exceeds floor(h); hi: the same one if its
            # count reaches past floor(h) + 1, else the next (none past the group's end)
            lo_at = np.searchsorted(run_n, target, side="right")
            lo = values[lo_at]
            next_at = np.minimum(lo_at + 1, rows - 1)
            same = (run_n[lo_at] > target + 1) | (lo_at + 1 >= ends)
            hi = np.where(same, lo, values[next_at])
            frac = h - k
            # numpy's two-sided form, so that results match numpy.percentile to the last bit
            pct[:, j] = np.where(frac >= 0.5, hi - (hi - lo) * (1 - frac), lo + (hi - lo) * frac)
    return pct


def job_percentiles_by_group(
    values: Sequence[float] | npt.ArrayLike,
    counts: Sequence[int] | npt.ArrayLike,
    groups: Sequence[int] | npt.ArrayLike,
    quantiles: Sequence[float],
) -> npt.NDArray[np.float64]:
    """Per group number 0 .. max(groups), the job-weighted ``quantiles`` of its ``values``
    repeated ``counts`` times, in any order (see the module's definition): one row per group
    (NaN for a group without a positive count), one column per quantile."""
    v = np.asarray(values, dtype=np.float64)
    n = np.asarray(counts, dtype=np.int64)
    g = np.asarray(groups, dtype=np.int64)
    size = int(g.max()) + 1 if g.size else 0
    keep = n > 0  # a value seen no time is no order statistic
    v, n, g = v[keep], n[keep], g[keep]
    order = np.lexsort((v, g))
    v, n, g = v[order], n[order], g[order]
    firsts = np.flatnonzero(np.diff(g, prepend=-1))
    out = np.full((size, len(quantiles)), np.nan)
    out[g[firsts]] = grouped_job_percentiles(v, n, firsts.astype(np.int64), quantiles)
    return out


def job_percentile(values: Sequence[float], counts: Sequence[int], q: float) -> float:
    """The q-quantile (0..1) of ``values`` repeated ``counts`` times, in any order (see the
    module's definition); at least one count must be positive."""
    pct = job_percentiles_by_group(values, counts, np.zeros(len(values), dtype=np.int64), (q,))
    return float(pct[0, 0])
