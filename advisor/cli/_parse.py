"""Option values every command reads the same way: lists, times, shares."""

from __future__ import annotations

import datetime as dt

from advisor.errors import UsageError


def csv_list(values: list[str] | None) -> tuple[str, ...]:
    """Repeated options and comma-separated values, flattened: ['a,b', 'c'] -> (a, b, c)."""
    out: list[str] = []
    for v in values or ():
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return tuple(out)


def utc_time(value: str | None, flag: str) -> dt.datetime | None:
    """A date or date-time (ISO 8601; one with an offset is converted) as naive UTC."""
    if value is None:
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{flag} {value!r}: not a date (YYYY-MM-DD, or YYYY-MM-DDTHH:MM:SS in UTC)"
        ) from None
    return t if t.tzinfo is None else t.astimezone(dt.UTC).replace(tzinfo=None)


def pct(v: float | None) -> str | None:
    """A share as a percentage for a table cell (None stays empty)."""
    return None if v is None else f"{100 * v:.1f}%"
