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


def warn_tolerance(tolerance: float | None) -> float:
    """``--tolerance`` as given, or its default; given, one ``Warning:`` line that it no longer
    moves the answer (one definition of enough: the wait, ``--max-wait``) and goes next release."""
    from advisor.recommend.query import DEFAULT_TOLERANCE, check_tolerance

    if tolerance is None:
        return DEFAULT_TOLERANCE

    check_tolerance(tolerance)  # a bad value is one error line, with no warning before it
    sys.stderr.write(
        "Warning: --tolerance no longer moves the answer and goes in the next release: enough "
        "cores means the engine core and the API server wait at most --max-wait; --tolerance "
        "sets only the band of the TTFT curve shown as evidence\n"
    )
    return tolerance


def warn_unknown_gpu_type(gpu_type: str) -> None:
    """One ``Warning:`` line on stderr when ``--gpu-type`` names no GPU family advisor knows
    (a typo such as H999): the answer is then an extrapolation, and the line says from what."""
    from advisor.gputypes import canonical_gpu_type, known_families

    known = known_families()
    if canonical_gpu_type(gpu_type) in known:
        return
    sys.stderr.write(
        f"Warning: --gpu-type {gpu_type!r} is no GPU type advisor knows (known: "
        f"{', '.join(known)}); the answer is an extrapolation (its warnings say from what); "
        "a site's own names for a known type: --gpu-types at ingest (docs/ratios.md)\n"
    )


def warn_stale_data(db: str | os.PathLike[str] | None) -> None:
    """One ``Warning:`` line on stderr per cluster whose newest record is older than
    ``datainfo.STALE_DAYS`` (as the dashboard warns on every page): a command that answers from
    the data, or writes a setting from it, says how old the data is. Nothing without a
    database."""
    from advisor.dbpath import resolve_db_path

    path = resolve_db_path(db)
    if not path.exists():
        return
    from advisor import datainfo, store

    con = store.connect(path, read_only=True)
    try:
        for sentence in datainfo.stale_sentences(con):
            sys.stderr.write(f"Warning: {sentence}\n")
    finally:
        con.close()


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
