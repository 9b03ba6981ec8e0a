"""What to report (:class:`ReportConfig`) and when: a calendar month in UTC and the one before
it, ``YYYY-MM`` or ``last`` as given on the command line, the months with GPU jobs, and the
check that a cluster asked for has any."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from advisor import store
from advisor.errors import NotFoundError, UsageError

_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")


@dataclass(frozen=True)
class ReportConfig:
    """What to report and where: one month (``YYYY-MM``) or every month, one cluster or all."""

    out_dir: Path
    month: str | None = None
    cluster: str | None = None
    all_months: bool = False
    png: bool = False
    pdf: bool = False
    top_n: int = 10  # rows in the "most below the recommendation" tables
    policy_file: Path | None = None  # an exported policy (Lua or JSON) to check compliance against
    model_file: Path | None = None  # the fitted model (default: $ADVISOR_MODEL, else shipped)
    pricing_file: Path | None = None  # a site's prices over the built-in AWS ones


@dataclass(frozen=True)
class Month:
    """A calendar month in UTC: ``start`` inclusive, ``end`` (next month's first day) exclusive."""

    label: str  # YYYY-MM
    start: dt.datetime
    end: dt.datetime

    def previous(self) -> Month:
        prev_last = self.start - dt.timedelta(days=1)
        return parse_month(f"{prev_last.year:04d}-{prev_last.month:02d}")


def parse_month(text: str) -> Month:
    """``YYYY-MM`` to a :class:`Month`; anything else is a usage error naming the flag."""
    m = _MONTH_RE.match(text.strip()) if text else None
    if not m or not 1 <= int(m.group(2)) <= 12 or int(m.group(1)) < 1970:
        raise UsageError(f"--month {text!r}: expected a month as YYYY-MM (e.g. 2024-10) or 'last'")
    year, month = int(m.group(1)), int(m.group(2))
    start = dt.datetime(year, month, 1)
    end = dt.datetime(year + (month == 12), month % 12 + 1, 1)
    return Month(f"{year:04d}-{month:02d}", start, end)


def resolve_month(text: str, now: dt.datetime | None = None) -> Month:
    """``YYYY-MM``, or ``last`` for the calendar month before ``now`` (UTC), as cron jobs want."""
    if text.strip().lower() in ("last", "previous"):
        today = now or dt.datetime.now(dt.UTC)
        if today.tzinfo is not None:
            today = today.astimezone(dt.UTC)
        return parse_month(f"{today.year:04d}-{today.month:02d}").previous()
    return parse_month(text)


def check_cluster(con: duckdb.DuckDBPyConnection, cluster: str) -> None:
    """Raise NotFoundError, naming the clusters there are, when ``cluster`` has no jobs."""
    rows = con.execute(store.query("report/clusters"), []).fetchall()
    known = {name: int(jobs) for name, jobs in rows}
    if not known.get(cluster):
        raise NotFoundError(
            f"--cluster {cluster!r}: no such cluster in the database; have {sorted(known)}"
        )


def available_months(con: duckdb.DuckDBPyConnection, cluster: str | None = None) -> list[Month]:
    """Every month in which a GPU allocation started (of ``cluster``, or of any), oldest first."""
    rows = con.execute(store.query("report/months"), [cluster]).fetchall()
    return [parse_month(f"{d.year:04d}-{d.month:02d}") for (d,) in rows]
