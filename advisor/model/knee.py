"""The measured knee of a TTFT-vs-cores curve: slowdowns with paired-bootstrap intervals (numpy only).

A measured curve is TTFT samples keyed by ``(engine start, repeat, cores)``: one *block* is one
``(start, repeat)`` pass over the core counts, and within a block every core count saw the same
traffic (the bench's common random numbers: identical arrival schedules and prompts). For each
core count ``c`` the slowdown is ``median TTFT at c / median TTFT at the most cores``.

Its interval comes from a paired, two-stage bootstrap:

1. resample whole blocks with replacement, the *same* blocks for every core count (the pairing:
   noise shared by a block, an engine start or a phase's traffic, cancels in the ratio as it
   does in the measurement);
2. within each chosen block, resample that block's requests at each core count (the noise of
   requests within a phase).

So both the noise of requests within a phase and the noise between phases and starts widen the
interval. A block given as one value per core count (a phase's p50) makes stage 2 a no-op.

The knee is *the fewest cores whose interval lies within the tolerance* (upper bound <= 1 +
tolerance) for it and for every larger count. :func:`measure_knee` returns a
:class:`KneeResult` whose ``status`` is

- ``"resolved"``: some count is slower beyond doubt (its lower bound > 1 + tolerance), and the
  knee is where the curve is within tolerance from then on (below the most cores, or the most
  cores when every smaller count is slower beyond doubt);
- ``"no effect"``: every interval lies within the tolerance (a flat curve; the knee is the
  fewest cores measured);
- ``"not resolved"``: the intervals are too wide to say either, or an effect is resolved but
  not where it ends, or there are too few blocks: no knee, never a point picked from noise.

Results are deterministic given ``seed``. This module is read on the job-submit path and by the
bench harness, so it imports numpy and nothing heavier.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

RESOLVED = "resolved"
NO_EFFECT = "no effect"
NOT_RESOLVED = "not resolved"
STATUSES: tuple[str, ...] = (RESOLVED, NO_EFFECT, NOT_RESOLVED)

DEFAULT_TOLERANCE = 0.10
DEFAULT_INTERVAL = 0.90
DEFAULT_BOOTSTRAP = 2000
MIN_BLOCKS = 2  # one block cannot show noise between phases or starts

BlockKey = tuple[Any, Any]  # (engine start, repeat or phase): any hashable values
SampleKey = tuple[Any, Any, int]  # (engine start, repeat or phase, cores)


@dataclass(frozen=True)
class CorePoint:
    """One core count of a measured curve: slowdown against the most cores, with its interval."""

    cores: int
    ttft_p50_ms: float  # median of every sample at this count (all blocks pooled)
    slowdown: float  # ttft_p50_ms / the reference count's (ratio; 1.0 at the reference)
    slowdown_low: float  # lower end of the paired-bootstrap interval
    slowdown_high: float  # upper end
    blocks: int  # blocks that measured this count
    samples: int  # samples pooled at this count

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "cores": self.cores,
            "ttft_p50_ms": self.ttft_p50_ms,
            "slowdown": self.slowdown,
            "slowdown_low": self.slowdown_low,
            "slowdown_high": self.slowdown_high,
            "blocks": self.blocks,
            "samples": self.samples,
        }


@dataclass(frozen=True)
class KneeResult:
    """A measured curve's knee and how sure the data are of it (see the module docstring)."""

    status: str  # one of STATUSES
    knee_cores: int | None  # None unless status is "resolved" or "no effect"
    within_tolerance_from_cores: int  # fewest cores from which every upper bound is within
    slower_cores: tuple[int, ...]  # counts whose lower bound is above 1 + tolerance
    reference_cores: int  # the most cores measured: the curve's 1.0
    tolerance: float  # e.g. 0.10: within 10% of the reference
    interval: float  # e.g. 0.90 for 5-95% intervals
    points: tuple[CorePoint, ...]  # by cores, ascending
    blocks: int  # (start, repeat) blocks in the data
    bootstrap_resamples: int
    seed: int
    reason: str  # one sentence: why this status

    @property
    def resolved(self) -> bool:
        return self.status == RESOLVED

    def point(self, cores: int) -> CorePoint | None:
        return next((p for p in self.points if p.cores == cores), None)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "knee_cores": self.knee_cores,
            "within_tolerance_from_cores": self.within_tolerance_from_cores,
            "slower_cores": list(self.slower_cores),
            "reference_cores": self.reference_cores,
            "tolerance": self.tolerance,
            "interval": self.interval,
            "blocks": self.blocks,
            "bootstrap_resamples": self.bootstrap_resamples,
            "seed": self.seed,
            "reason": self.reason,
            "points": [p.to_json_dict() for p in self.points],
        }


@dataclass(frozen=True)
class Replication:
    """Whether a rerun's curve agrees with a stored one: every common core count's intervals
    overlap."""

    agree: bool
    common_cores: tuple[int, ...]
    disagreeing_cores: tuple[int, ...]  # counts whose two intervals do not overlap
    reason: str


def _blocks_by_cores(
    samples: Mapping[SampleKey, Sequence[float] | float],
) -> tuple[list[BlockKey], dict[int, dict[int, np.ndarray]]]:
    """Blocks in a stable order, and per core count the finite positive samples of each block
    (by block index)."""
    keys = sorted({(k[0], k[1]) for k in samples}, key=lambda b: (repr(b[0]), repr(b[1])))
    index = {b: i for i, b in enumerate(keys)}
    by_cores: dict[int, dict[int, np.ndarray]] = {}
    for (start, rep, cores), values in samples.items():
        arr = np.atleast_1d(np.asarray(values, dtype=float))
        arr = arr[np.isfinite(arr) & (arr > 0)]
        if arr.size == 0:
            continue
        c = int(cores)
        if c != cores or c < 1:
            raise ValueError(f"cores must be a positive whole number, got {cores!r}")
        slot = by_cores.setdefault(c, {})
        b = index[(start, rep)]
        slot[b] = np.concatenate([slot[b], arr]) if b in slot else arr
    return keys, by_cores


def _resampled_medians(
    per_block: dict[int, np.ndarray], chosen: np.ndarray, n_blocks: int, rng: np.random.Generator
) -> np.ndarray:
    """Median of the pooled, within-block-resampled samples of ``chosen`` blocks, one per row of
    ``chosen`` (shape (resamples, blocks)); nan where no chosen block measured this count."""
    width = max((a.size for a in per_block.values()), default=1)
    table = np.full((n_blocks, width), np.nan)
    counts = np.zeros(n_blocks, dtype=int)
    for b, arr in per_block.items():
        table[b, : arr.size] = arr
        counts[b] = arr.size
    n_chosen = counts[chosen]  # (R, B)
    u = rng.random((*chosen.shape, width))
    idx = np.floor(u * n_chosen[..., None]).astype(int)
    values = table[chosen[..., None], np.minimum(idx, width - 1)]
    values = np.where(np.arange(width) < n_chosen[..., None], values, np.nan)
    flat = values.reshape(values.shape[0], -1)
    out = np.full(flat.shape[0], np.nan)
    has = np.isfinite(flat).any(axis=1)
    if has.any():
        out[has] = np.nanmedian(flat[has], axis=1)
    return out


def measure_knee(
    samples: Mapping[SampleKey, Sequence[float] | float],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    interval: float = DEFAULT_INTERVAL,
    bootstrap_resamples: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    min_blocks: int = MIN_BLOCKS,
) -> KneeResult:
    """The slowdown of each core count against the most cores, its paired-bootstrap interval,
    and the knee with its status.

    ``samples`` maps ``(engine start, repeat or phase, cores)`` to that phase's TTFT samples in
    ms (or one value, e.g. the phase's p50). Non-finite and non-positive samples are ignored.
    Raises ValueError for a non-whole core count or parameters out of range.
    """
    if not (0.0 <= tolerance < 10.0):
        raise ValueError(f"tolerance must be in [0, 10), got {tolerance!r}")
    if not (0.0 < interval < 1.0):
        raise ValueError(f"interval must be in (0, 1), got {interval!r}")
    if bootstrap_resamples < 10:
        raise ValueError(f"bootstrap_resamples must be at least 10, got {bootstrap_resamples!r}")
    keys, by_cores = _blocks_by_cores(samples)
    cores = sorted(by_cores)
    if not cores:
        return _empty(tolerance, interval, bootstrap_resamples, seed, len(keys))
    ref = cores[-1]
    n_blocks = len(keys)
    rng = np.random.default_rng(seed)
    chosen = rng.integers(0, n_blocks, size=(bootstrap_resamples, n_blocks))
    ref_boot = _resampled_medians(by_cores[ref], chosen, n_blocks, rng)
    ref_p50 = float(np.median(np.concatenate(list(by_cores[ref].values()))))
    alpha = (1.0 - interval) / 2.0
    points = []
    for c in cores:
        pooled = np.concatenate(list(by_cores[c].values()))
        p50 = float(np.median(pooled))
        if c == ref:
            lo = hi = 1.0
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = _resampled_medians(by_cores[c], chosen, n_blocks, rng) / ref_boot
            ratio = ratio[np.isfinite(ratio)]
            if ratio.size:
                lo = float(np.quantile(ratio, alpha))
                hi = float(np.quantile(ratio, 1.0 - alpha))
            else:
                lo, hi = 0.0, float("inf")
        points.append(
            CorePoint(
                cores=c,
                ttft_p50_ms=p50,
                slowdown=p50 / ref_p50,
                slowdown_low=lo,
                slowdown_high=hi,
                blocks=len(by_cores[c]),
                samples=int(pooled.size),
            )
        )
    return _judge(
        tuple(points), tolerance, interval, bootstrap_resamples, seed, n_blocks, min_blocks
    )


def _empty(tolerance: float, interval: float, n: int, seed: int, blocks: int) -> KneeResult:
    return KneeResult(
        NOT_RESOLVED, None, 0, (), 0, tolerance, interval, (), blocks, n, seed, "no samples"
    )


def _judge(
    points: tuple[CorePoint, ...],
    tolerance: float,
    interval: float,
    n: int,
    seed: int,
    n_blocks: int,
    min_blocks: int,
) -> KneeResult:
    limit = 1.0 + tolerance
    within = [p.slowdown_high <= limit for p in points]
    first = len(points) - 1
    while first > 0 and within[first - 1]:
        first -= 1
    from_cores = points[first].cores
    slower = [p.cores for p in points if p.slowdown_low > limit]
    ref = points[-1].cores

    def result(status: str, knee: int | None, reason: str) -> KneeResult:
        return KneeResult(
            status,
            knee,
            from_cores,
            tuple(slower),
            ref,
            tolerance,
            interval,
            points,
            n_blocks,
            n,
            seed,
            reason,
        )

    if len(points) < 2:
        return result(NOT_RESOLVED, None, f"only one core count measured ({ref})")
    if n_blocks < min_blocks:
        return result(
            NOT_RESOLVED,
            None,
            f"{n_blocks} (start, repeat) block(s); at least {min_blocks} are needed to see the "
            "noise between phases",
        )
    pct = f"{tolerance:.0%}"
    if slower and from_cores == ref and len(slower) < len(points) - 1:
        unsure = [p.cores for p in points[:-1] if p.cores not in slower]
        return result(
            NOT_RESOLVED,
            None,
            f"slower beyond {pct} at {', '.join(map(str, slower))} cores, but where that ends "
            f"is not resolved: the intervals at {', '.join(map(str, unsure))} cores straddle {pct}",
        )
    if slower:
        return result(
            RESOLVED,
            from_cores,
            f"slower beyond {pct} at {', '.join(map(str, slower))} cores; within {pct} from "
            f"{from_cores} cores on",
        )
    if all(within):
        return result(
            NO_EFFECT,
            points[0].cores,
            f"every core count from {points[0].cores} to {ref} is within {pct} of {ref} cores",
        )
    unsure = [p.cores for p, w in zip(points, within, strict=True) if not w]
    return result(
        NOT_RESOLVED,
        None,
        f"the intervals at {', '.join(map(str, unsure))} cores straddle {pct}: neither an "
        "effect nor its absence is resolved",
    )


def replicates(old: KneeResult, new: KneeResult) -> Replication:
    """Whether ``new`` (a rerun) agrees with ``old`` within their intervals at every core count
    both measured."""
    common = tuple(sorted({p.cores for p in old.points} & {p.cores for p in new.points}))
    if len(common) < 2:
        return Replication(False, common, (), "fewer than two core counts in common")
    bad = []
    for c in common:
        a, b = old.point(c), new.point(c)
        assert a is not None and b is not None
        if a.slowdown_high < b.slowdown_low or b.slowdown_high < a.slowdown_low:
            bad.append(c)
    if bad:
        return Replication(
            False,
            common,
            tuple(bad),
            f"the intervals do not overlap at {', '.join(map(str, bad))} cores",
        )
    return Replication(True, common, (), f"the intervals overlap at all {len(common)} counts")
