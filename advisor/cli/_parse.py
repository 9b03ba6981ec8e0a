"""Option values every command reads the same way: lists, times, shares, finite numbers."""

from __future__ import annotations

import datetime as dt
import math
import os
import sys

from advisor.errors import UsageError


def csv_list(values: list[str] | None) -> tuple[str, ...]:
    """Repeated options and comma-separated values, flattened: ['a,b', 'c'] -> (a, b, c)."""
    out: list[str] = []
    for v in values or ():
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return tuple(out)


def finite_float(value: float | str, flag: str) -> float:
    """An option's number, refused as a usage error unless it is finite.

    Python's ``float`` (and so the command-line framework) accepts ``nan``, ``inf`` and
    ``1e999``; no option of advisor means any of them, and each would surface later as a
    traceback or a silent NaN. Strings are converted here too (for comma-separated lists).
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{flag} {value!r}: not a number") from None
    if not math.isfinite(number):
        raise UsageError(f"{flag} {value}: not a finite number (nan and inf mean nothing here)")
    return number


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


NO_INVENTORY = "no node inventory, so the cap is the reference instance's"


def warn_missing_db(db: str | os.PathLike[str] | None, without: str) -> None:
    """One ``Warning:`` line on stderr when the database named by ``--db`` (or ``$ADVISOR_DB``)
    does not exist and the command answers without it; ``without`` says what it then lacks.
    The file is never created by a command that only reads it."""
    from advisor.dbpath import missing_named_db

    path = missing_named_db(db)
    if path is not None:
        sys.stderr.write(
            f"Warning: {path}: no such database (named by --db or $ADVISOR_DB); "
            f"answering without it: {without}\n"
        )
