"""The hours around a time zone's clock changes, where a local time read from sacct text is
ambiguous (the hour repeats when the clocks go back) or does not exist (the hour skipped when
they go forward): such a time is stored one way, maybe an hour off, and the load says so."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

UTC = dt.UTC


def _offset(zone: ZoneInfo, at: dt.datetime) -> dt.timedelta:
    return at.astimezone(zone).utcoffset() or dt.timedelta(0)


def _change_at(zone: ZoneInfo, lo: dt.datetime, hi: dt.datetime) -> dt.datetime:
    """The first UTC minute in (lo, hi] whose offset differs from lo's (bisection)."""
    before = _offset(zone, lo)
    while hi - lo > dt.timedelta(minutes=1):
        mid = lo + (hi - lo) / 2
        if _offset(zone, mid) == before:
            lo = mid
        else:
            hi = mid
    return hi.replace(second=0, microsecond=0)


def windows(tz: str, first: dt.datetime, last: dt.datetime) -> list[dict[str, dt.datetime]]:
    """UTC windows (naive, as stored) of every clock change of ``tz`` from ``first`` to
    ``last`` (naive UTC): the change's instant, widened each side by the size of the jump."""
    zone = ZoneInfo(tz)
    out: list[dict[str, dt.datetime]] = []
    day = first.replace(tzinfo=UTC, hour=0, minute=0, second=0, microsecond=0)
    end = last.replace(tzinfo=UTC) + dt.timedelta(days=1)
    step = dt.timedelta(days=1)
    while day < end:
        nxt = day + step
        if _offset(zone, day) != _offset(zone, nxt):
            at = _change_at(zone, day, nxt)
            jump = abs(_offset(zone, at) - _offset(zone, at - dt.timedelta(minutes=1)))
            lo, hi = at - jump, at + jump
            out.append({"lo": lo.replace(tzinfo=None), "hi": hi.replace(tzinfo=None)})
        day = nxt
    return out
