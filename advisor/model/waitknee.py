"""The wait knee of a measured series: each role's run-queue wait share per core count with a
paired-bootstrap interval, and the fewest cores from which the engine core and the API server
wait less than ``max_wait`` beyond doubt (numpy only).

A series' wait data are one value per (block, cores, role), a block being one (engine start,
repeat) pass over the core counts with common traffic (as in :mod:`advisor.model.knee`). The interval
of a count's mean wait resamples whole blocks with replacement, the same blocks for every count.

The wait knee is the fewest cores whose upper bound is at most ``max_wait`` for every role
judged, at that count and every larger one. Its ``status``:

- ``"resolved"``: the count just below the knee waits more than ``max_wait`` beyond doubt (its
  lower bound is above) for some role: the data show where the wait ends;
- ``"no effect"``: even the fewest cores measured wait less than ``max_wait`` beyond doubt;
- ``"not resolved"``: no count is below the threshold beyond doubt from there on, or the count
  below the knee straddles the threshold, or fewer than two blocks: no knee is given.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.model.knee import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_INTERVAL,
    MIN_BLOCKS,
    NO_EFFECT,
    NOT_RESOLVED,
    RESOLVED,
)

# The default threshold (share of wall time one role spends runnable but not running): under the
# largest wait at which TTFT and inter-token latency were within 10% of ample cores beyond doubt,
# from `advisor bench curve --evidence` over the committed runs (docs/model.md, "The wait knee").
DEFAULT_MAX_WAIT = 0.15
JUDGED_ROLES: tuple[str, ...] = ("engine_core", "api_server")


def check_max_wait(value: float, flag: str = "--max-wait") -> None:
    """Raise UsageError unless ``value`` is a share of wall time in (0, 1): every command that
    takes the threshold checks it here, so each refuses it in the same words."""
    from advisor.errors import UsageError

    if not (math.isfinite(value) and 0 < value < 1):
        raise UsageError(f"{flag} {value:g}: a share of wall time between 0 and 1 (e.g. 0.15)")


@dataclass(frozen=True)
class WaitPoint:
    """One role at one core count: mean wait share over blocks, with its interval."""

    cores: int
    role: str
    wait_share: float
    wait_low: float
    wait_high: float
    blocks: int

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "cores": self.cores,
            "role": self.role,
            "wait_share": self.wait_share,
            "wait_low": self.wait_low,
            "wait_high": self.wait_high,
            "blocks": self.blocks,
        }


@dataclass(frozen=True)
class WaitKnee:
    """A series' wait knee and how sure the data are of it (see the module docstring)."""

    status: str
    knee_cores: int | None
    max_wait: float
    roles: tuple[str, ...]
    points: tuple[WaitPoint, ...]  # by cores, then role
    blocks: int
    interval: float
    reason: str

    def point(self, cores: int, role: str) -> WaitPoint | None:
        return next((p for p in self.points if p.cores == cores and p.role == role), None)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "knee_cores": self.knee_cores,
            "max_wait": self.max_wait,
            "roles": list(self.roles),
            "blocks": self.blocks,
            "interval": self.interval,
            "reason": self.reason,
            "points": [p.to_json_dict() for p in self.points],
        }


WaitSamples = Mapping[tuple[Any, int], Mapping[str, float]]  # (block, cores) -> role -> share


def measure_wait_knee(
    samples: WaitSamples,
    *,
    max_wait: float = DEFAULT_MAX_WAIT,
    roles: Sequence[str] = JUDGED_ROLES,
    report_roles: Sequence[str] = ("engine_core", "api_server", "gpu_worker"),
    interval: float = DEFAULT_INTERVAL,
    bootstrap_resamples: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> WaitKnee:
    """The wait knee of one series' wait samples (see the module docstring)."""
    blocks = sorted({b for b, _ in samples}, key=repr)
    cores = sorted({c for _, c in samples})
    present = [r for r in report_roles if any(r in v for v in samples.values())]
    judged = tuple(r for r in roles if r in present)
    bidx = {b: i for i, b in enumerate(blocks)}
    lo_q, hi_q = (1 - interval) / 2, 1 - (1 - interval) / 2
    rng = np.random.default_rng(seed)
    draws = (
        rng.integers(0, len(blocks), size=(bootstrap_resamples, len(blocks))) if blocks else None
    )
    points: list[WaitPoint] = []
    for c in cores:
        for role in present:
            vals = np.full(len(blocks), np.nan)
            for (b, cc), by_role in samples.items():
                if cc == c and role in by_role and by_role[role] is not None:
                    vals[bidx[b]] = float(by_role[role])
            n = int(np.sum(~np.isnan(vals)))
            if n == 0:
                continue
            mean = float(np.nanmean(vals))
            if draws is not None and n >= MIN_BLOCKS:
                with warnings.catch_warnings():  # a resample of only missing blocks is NaN
                    warnings.simplefilter("ignore", RuntimeWarning)
                    boots = np.nanmean(vals[draws], axis=1)
                boots = boots[~np.isnan(boots)]
                low, high = float(np.quantile(boots, lo_q)), float(np.quantile(boots, hi_q))
            else:
                low, high = float("-inf"), float("inf")
            points.append(WaitPoint(c, role, mean, min(low, mean), max(high, mean), n))
    return _judge(tuple(points), cores, judged, max_wait, len(blocks), interval)


def _judge(
    points: tuple[WaitPoint, ...],
    cores: Sequence[int],
    roles: tuple[str, ...],
    max_wait: float,
    blocks: int,
    interval: float,
) -> WaitKnee:
    def result(status: str, knee: int | None, reason: str) -> WaitKnee:
        return WaitKnee(status, knee, max_wait, roles, points, blocks, interval, reason)

    if not roles or not cores:
        return result(NOT_RESOLVED, None, "no wait data for the engine core or the API server")
    if blocks < MIN_BLOCKS:
        return result(NOT_RESOLVED, None, f"{blocks} block(s): need {MIN_BLOCKS} for an interval")
    by = {(p.cores, p.role): p for p in points}

    def below(c: int) -> bool:  # every judged role under the threshold beyond doubt
        return all((p := by.get((c, r))) is not None and p.wait_high <= max_wait for r in roles)

    def above(c: int) -> list[str]:  # roles over the threshold beyond doubt
        return [r for r in roles if (p := by.get((c, r))) is not None and p.wait_low > max_wait]

    knee = None
    for c in reversed(cores):
        if not below(c):
            break
        knee = c
    if knee is None:
        return result(
            NOT_RESOLVED,
            None,
            f"at the most cores ({cores[-1]}) the wait is not below {max_wait:g} beyond doubt",
        )
    if knee == cores[0]:
        return result(NO_EFFECT, knee, f"every count waits under {max_wait:g} beyond doubt")
    prev = cores[cores.index(knee) - 1]
    over = above(prev)
    if over:
        return result(
            RESOLVED,
            knee,
            f"{', '.join(over)} wait{'s' if len(over) == 1 else ''} over {max_wait:g} at {prev} "
            f"cores and under it from {knee} on, beyond doubt",
        )
    return result(
        NOT_RESOLVED,
        None,
        f"under {max_wait:g} from {knee} cores, but the interval at {prev} straddles it",
    )
