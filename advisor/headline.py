"""How far to trust a headline figure, said next to it: the one record the Overview, the monthly
report's opening, ``advisor recommend`` and ``advisor metrics`` read (issue 29 item 1).

A :class:`Headline` holds the GPU-hours lost and their dollar value with the 90% interval of the
fit's bootstrap refits, the GPU time they come from (so the loss reads as a share of it), that
the loss is an upper bound (every GPU job counted as an LLM server), which GPU types the curve
was calibrated on and what the others were extrapolated from (:class:`Calibration`), the age of
the newest record (:class:`DataAge`), the basis of the recommendation in one sentence, and,
where jobs' own usage is loaded, how much of that GPU time ran in jobs whose usage looks starved
(:class:`UsageEvidence`). Its ``*_words`` methods are the sentences every surface shows, so the
dashboard and the report say the same thing. It imports only :mod:`advisor.wording` at load
time (the curve's GPU speeds when a calibration is asked for), so the job-submit path can use
:func:`calibration_of` and :func:`basis_sentence` without loading more.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from advisor.wording import age_words, range_text

INTERVAL_PCT = 90  # the refits' 5-95% interval, as every interval of the fit


@dataclass(frozen=True)
class Calibration:
    """Whether the curve was fitted on a GPU type's own measurements, and if not, which
    calibrated platforms it was extrapolated from (by the relative GPU speed of datasheets)."""

    gpu_type: str
    calibrated: bool
    extrapolated_from: tuple[str, ...] = ()  # the calibrated platforms; empty when calibrated
    relative_gpu_speed: float | None = None  # the datasheet speed used; None: unknown GPU

    def badge(self, name: str | None = None) -> str:
        """ "H200: calibrated", or "H100: extrapolated from H200 and RTX PRO 6000 Blackwell
        (datasheet speed 1 times an H100's)"; ``name``: the GPU type as the caller must show it."""
        shown = self.gpu_type if name is None else name
        if self.calibrated:
            return f"{shown}: calibrated"
        speed = (
            f"datasheet speed {self.relative_gpu_speed:g} times an H100's"
            if self.relative_gpu_speed is not None
            else "speed not known: counted as an H100"
        )
        return f"{shown}: extrapolated from {_and(self.extrapolated_from)} ({speed})"


def _and(names: Sequence[str]) -> str:
    names = list(names) or ["no measured platform"]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def calibration_of(gpu_type: str, platforms_seen: Sequence[str]) -> Calibration:
    """The calibration of ``gpu_type`` (a canonical family, or "(untyped)") against the platforms
    the fit saw (``CurveParams.meta["platforms_seen"]``; none listed: every type calibrated, as
    :func:`advisor.model.slowdown.coverage_warnings` reads it)."""
    from advisor.model.slowdown import GPU_SPEED

    seen = tuple(platforms_seen)
    if not seen or gpu_type in seen:
        return Calibration(gpu_type, True)
    speed = GPU_SPEED.get(gpu_type)
    return Calibration(gpu_type, False, seen, speed)


def calibrations_of(
    gpu_types: Iterable[str], platforms_seen: Sequence[str]
) -> tuple[Calibration, ...]:
    """One :class:`Calibration` per GPU type, in the order given, each once."""
    return tuple(calibration_of(t, platforms_seen) for t in dict.fromkeys(gpu_types))


def basis_sentence(decision_basis: str, interval_pct: int = INTERVAL_PCT) -> str:
    """The recommendation's basis as an admin can repeat it to a manager."""
    cores = {
        "capacity model": "the fewest cores per job that the measured CPU demand fits in at "
        "the fitted utilisation target, never below 2 + N (N GPUs)",
        "no evidence": "2 + N cores per job (N GPUs), as vLLM advises: no measured series of "
        "this configuration",
        "wait model": "the fewest cores per job, never below 2 + N (N GPUs), at which the "
        "engine core and the API server are predicted to wait for a CPU at most the threshold "
        "share of the time (the measured run-queue wait, fitted against spare cores)",
    }.get(
        decision_basis,
        "2 + N cores per job (N GPUs), raised where the measured CPU demand needs more",
    )
    source = (
        "the most the predicted wait lets TTFT slow (each process's CPU work stretched by "
        "1 / (1 - wait / demand))"
        if decision_basis == "wait model"
        else "the fitted TTFT-vs-cores curve"
    )
    return (
        f"{cores[0].upper()}{cores[1:]}; lost time is an upper bound (every GPU job counted as "
        f"an LLM server) from {source}, {interval_pct}% interval."
    )


@dataclass(frozen=True)
class DataAge:
    """The newest record (submit or end, UTC) of the data behind a figure, and its age."""

    newest_record: dt.datetime | None  # None: no records
    age_days: float | None

    def words(self) -> str:
        """ "data up to 2024-12-31, 701 days old", or "no records loaded"."""
        if self.newest_record is None or self.age_days is None:
            return "no records loaded"
        return f"data up to {self.newest_record:%Y-%m-%d}, {age_words(self.age_days)}"


def data_age_of(newest: Iterable[dt.datetime | None], now: dt.datetime) -> DataAge:
    """The newest of ``newest`` (naive UTC, or aware) and its age at ``now``."""
    naive = [t.astimezone(dt.UTC).replace(tzinfo=None) if t.tzinfo else t for t in newest if t]
    if not naive:
        return DataAge(None, None)
    last = max(naive)
    at = now.astimezone(dt.UTC).replace(tzinfo=None) if now.tzinfo else now
    return DataAge(last, (at - last).total_seconds() / 86400.0)


@dataclass(frozen=True)
class UsageEvidence:
    """What the jobs' own usage says about the GPU time behind the estimate: the GPU-hours in
    jobs whose usage looks starved (CPU busy, GPU idle) and how much carries usage at all."""

    gpu_hours_starved: float
    share_gpu_hours_with_usage: float  # 0-1, CPU and GPU usage both recorded
    trust: str  # 'usage' | 'allocation' (advisor.usage.advice)
    gpu_hours_lost_starved: float | None = None  # the part of the loss in those jobs, if known

    def words(self, gpu_hours_lost: float, period: str, measured: bool = False) -> str:
        """The loss split into the jobs whose usage looks starved and the rest, as a sentence;
        ``measured``: part of the loss rests on measured CPU pressure (said beside)."""
        if self.share_gpu_hours_with_usage <= 0:
            return (
                "No job's own usage (CPU efficiency, GPU utilisation) is loaded."
                if measured
                else "No job's own usage is loaded: the loss rests on the model alone."
            )
        d = 0 if max(gpu_hours_lost, self.gpu_hours_starved) >= 10 else 1
        if self.gpu_hours_lost_starved is None:
            return (
                f"Usage is recorded for {self.share_gpu_hours_with_usage:.0%} of the GPU time: "
                f"{self.gpu_hours_starved:,.{d}f} GPU-h {period} ran in jobs whose usage looks "
                "starved (CPU busy, GPU idle)."
            )
        rest = max(gpu_hours_lost - self.gpu_hours_lost_starved, 0.0)
        return (
            f"Usage is recorded for {self.share_gpu_hours_with_usage:.0%} of the GPU time: "
            f"{self.gpu_hours_lost_starved:,.{d}f} GPU-h of the loss {period} is in jobs whose "
            f"usage looks starved (CPU busy, GPU idle; {self.gpu_hours_starved:,.{d}f} GPU-h "
            f"run), where it rests on evidence; the other {rest:,.{d}f} GPU-h are the model's "
            "upper bound."
        )


class MeasuredRow(Protocol):
    """A loss row that knows its measured part: the report's and the fix plan's rows."""

    @property
    def gpu_hours_measured(self) -> float: ...
    @property
    def gpu_hours_lost_measured(self) -> tuple[float, float]: ...
    @property
    def loss_disagreement(self) -> str | None: ...
    @property
    def months(self) -> float: ...  # what the row's figures are divided by for one month


@dataclass(frozen=True)
class MeasuredEvidence:
    """How much of the GPU time behind the loss was measured (each job's cgroup CPU pressure),
    what its CPU waiting held (``held_low`` full to ``held_high`` some, the loss of those jobs),
    and in how many groups the model's loss for the measured jobs lies outside that range."""

    share_gpu_hours_measured: float  # 0-1
    held_low: float
    held_high: float
    groups: int
    groups_apart: int

    @classmethod
    def of(cls, rows: Sequence[MeasuredRow], measured: float, gpu_hours: float) -> MeasuredEvidence:
        """From loss rows, each divided by its ``months`` (the report's rows are a month's, the
        fix plan's their span's); ``measured`` and ``gpu_hours`` are already per month."""
        return cls(
            share_gpu_hours_measured=min(measured / gpu_hours, 1.0) if gpu_hours else 0.0,
            held_low=sum(r.gpu_hours_lost_measured[0] / r.months for r in rows),
            held_high=sum(r.gpu_hours_lost_measured[1] / r.months for r in rows),
            groups=sum(1 for r in rows if r.gpu_hours_measured > 0),
            groups_apart=sum(1 for r in rows if r.loss_disagreement),
        )

    def words(self, period: str) -> str:
        if self.share_gpu_hours_measured <= 0:
            return ""  # the usage sentence says the loss rests on the model alone
        d = 0 if self.held_high >= 10 else 1
        text = (
            f"{self.share_gpu_hours_measured:.0%} of the GPU time {period} ran in jobs whose CPU "
            f"pressure was measured: their part of the loss, {self.held_low:,.{d}f} to "
            f"{self.held_high:,.{d}f} GPU-h, is what their own CPU waiting held (PSI full to "
            "some); the model's estimate speaks for the rest."
        )
        if self.groups_apart:
            text += (
                f" In {self.groups_apart} of {self.groups} groups the model's loss for the "
                "measured jobs lies outside what they measured (advisor recommend --partition "
                "names them)."
            )
        return text


def _digits(value: float) -> int:
    """Decimals for an amount: none from 10 on, one below, so that a small one is not "0"."""
    return 0 if abs(value) >= 10 else 1


@dataclass(frozen=True)
class Headline:
    """The headline figures with how far to trust them; see the module docstring. Figures cover
    ``period`` ("per month", or the span's totals when the data span less than a month)."""

    gpu_hours_lost: float
    gpu_hours_lost_low: float
    gpu_hours_lost_high: float
    gpu_hours: float  # the GPU time the loss comes from, over the same period
    lost_usd: float  # priced GPU types only
    lost_usd_low: float
    lost_usd_high: float
    period: str
    basis_sentence: str
    calibrations: tuple[Calibration, ...]
    data_age: DataAge
    usage: UsageEvidence | None = None
    upper_bound: bool = True  # the loss assumes every GPU job is an LLM server
    measured: MeasuredEvidence | None = None  # None: nobody asked (no plan rows to read it from)
    interval_pct: int = INTERVAL_PCT
    # the model's held-out relative error (0.48: +-48%), as Recommend states it; the interval
    # shown carries it on top of the fit's own spread
    model_error: float | None = None
    # the intervals shown (the fit's, bracketing the figure, with the model's error on top)
    gpu_hours_lost_range: tuple[float, float] = field(init=False)
    lost_usd_range: tuple[float, float] = field(init=False)

    def __post_init__(self) -> None:
        lost = self._widen(self.gpu_hours_lost, self.gpu_hours_lost_low, self.gpu_hours_lost_high)
        usd = self._widen(self.lost_usd, self.lost_usd_low, self.lost_usd_high)
        if self.gpu_hours > 0 and lost[1] > self.gpu_hours:
            # no part can exceed the whole: the loss's top is the GPU time itself, and the
            # dollars' top falls in proportion
            cut = max(self.gpu_hours, self.gpu_hours_lost) / lost[1]
            lost = (min(lost[0], self.gpu_hours), lost[1] * cut)
            usd = (usd[0], max(usd[1] * cut, self.lost_usd))
        object.__setattr__(self, "gpu_hours_lost_range", lost)
        object.__setattr__(self, "lost_usd_range", usd)

    @property
    def share_gpu_hours_lost(self) -> float:
        """The loss as a share (0-1) of the GPU time it comes from."""
        return self.gpu_hours_lost / self.gpu_hours if self.gpu_hours else 0.0

    @property
    def extrapolated(self) -> tuple[Calibration, ...]:
        return tuple(c for c in self.calibrations if not c.calibrated)

    def _widen(self, point: float, low: float, high: float) -> tuple[float, float]:
        """The fit's interval around ``point`` with the model's error on top: it brackets the
        point, and each end moves out by the model's relative error."""
        e = self.model_error or 0.0
        return max(0.0, min(low, point) * (1.0 - e)), max(high, point) * (1.0 + e)

    def _interval(self, low: float, high: float, prefix: str = "") -> str:
        """ " (90% interval 58 to 70)", or nothing when its ends round alike."""
        text = range_text(low, high, _digits(high), "", prefix=prefix)
        if " to " not in text:
            return ""
        error = f", the model's ±{self.model_error:.0%} error included" if self.model_error else ""
        return f" ({self.interval_pct}% interval {text}{error})"

    def gpu_hours_lost_text(self) -> str:
        """The loss as a headline shows it: "2,490", "0.9" (whether it is a bound is the
        label's to say: :meth:`bound_words`)."""
        return f"{self.gpu_hours_lost:,.{_digits(self.gpu_hours_lost_range[1])}f}"

    def lost_usd_text(self) -> str:
        return f"${self.lost_usd:,.{_digits(self.lost_usd_range[1])}f}"

    def gpu_hours_interval_text(self) -> str:
        """The loss's interval (fit and model error), one number when its ends round alike."""
        low, high = self.gpu_hours_lost_range
        return range_text(low, high, _digits(high), "")

    def usd_interval_text(self) -> str:
        low, high = self.lost_usd_range
        return range_text(low, high, _digits(high), "", prefix="$")

    def bound_words(self) -> str:
        """Why the loss is an upper bound, or ""."""
        return (
            "an upper bound: it counts every GPU job as an LLM server" if self.upper_bound else ""
        )

    def lost_words(self) -> str:
        """ "2,490 GPU-h per month (90% interval 1,300 to 3,700, the model's ±48% error
        included), 38% of the 6,500 GPU-h the jobs ran; an upper bound: ..."."""
        low, high = self.gpu_hours_lost_range
        d = _digits(high)
        bound = self.bound_words()
        return (
            f"{self.gpu_hours_lost:,.{d}f} GPU-h {self.period}{self._interval(low, high)}, "
            f"{self.share_gpu_hours_lost:.0%} of the {self.gpu_hours:,.{_digits(self.gpu_hours)}f}"
            f" GPU-h the jobs ran" + (f"; {bound}" if bound else "")
        )

    def usd_words(self) -> str:
        low, high = self.lost_usd_range
        return (
            f"${self.lost_usd:,.{_digits(high)}f} {self.period}"
            f"{self._interval(low, high, '$')} at the reference cloud price per GPU-hour"
        )

    def measured_words(self) -> str:
        """How much of the loss rests on measurement, or "" when nobody asked."""
        return "" if self.measured is None else self.measured.words(self.period)

    def usage_words(self) -> str:
        """What the jobs' own usage says about the loss, or "" when nobody asked."""
        if self.usage is None:
            return ""
        measured = self.measured is not None and self.measured.share_gpu_hours_measured > 0
        return self.usage.words(self.gpu_hours_lost, self.period, measured)

    def calibration_words(self) -> str:
        """Which GPU types are extrapolated and from what, or that all are calibrated."""
        if not self.calibrations:
            return ""
        off = self.extrapolated
        if not off:
            return "Every GPU type here is calibrated on its own measurements."
        return "Not calibrated: " + "; ".join(c.badge() for c in off) + "."


def headline_of(
    *,
    gpu_hours_lost: float,
    gpu_hours_lost_interval: tuple[float, float],
    gpu_hours: float,
    lost_usd: float,
    lost_usd_interval: tuple[float, float],
    period: str,
    decision_basis: str,
    gpu_types: Iterable[str],
    platforms_seen: Sequence[str],
    data_age: DataAge,
    usage: UsageEvidence | None = None,
    model_error: float | None = None,
    measured: MeasuredEvidence | None = None,
) -> Headline:
    """A :class:`Headline` from the figures of a plan or a report."""
    return Headline(
        gpu_hours_lost=gpu_hours_lost,
        gpu_hours_lost_low=gpu_hours_lost_interval[0],
        gpu_hours_lost_high=gpu_hours_lost_interval[1],
        gpu_hours=gpu_hours,
        lost_usd=lost_usd,
        lost_usd_low=lost_usd_interval[0],
        lost_usd_high=lost_usd_interval[1],
        period=period,
        basis_sentence=basis_sentence(decision_basis),
        calibrations=calibrations_of(gpu_types, platforms_seen),
        data_age=data_age,
        usage=usage,
        model_error=model_error,
        measured=measured,
    )


def model_error_of(meta: dict[str, Any]) -> float | None:
    """The fit's held-out relative error (its validation table's, else leave-one-out), or None
    when it was not validated."""
    validation = meta.get("validation")
    if isinstance(validation, dict) and validation.get("mape") is not None:
        return float(validation["mape"])
    loo = meta.get("loo_mape")
    return None if loo is None else float(loo)
