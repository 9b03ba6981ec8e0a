"""The sidebar's choices as every page reads them: the job filters (:class:`Filters`, whole
months by job start) and the privacy setting that shows names as pseudonyms."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

import streamlit as st

from advisor import datainfo


@dataclass(frozen=True)
class Filters:
    """The sidebar's choices; an empty tuple means "all". The time range is whole months
    (UTC, by job start), as ``advisor ratios`` assigns jobs to months: ``first_month`` and
    ``last_month`` (inclusive) are ``YYYY-MM`` or None for an open end."""

    clusters: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    gpu_types: tuple[str, ...] = ()
    first_month: str | None = None
    last_month: str | None = None

    @property
    def since_datetime(self) -> dt.datetime | None:
        """The first instant of the first month."""
        if self.first_month is None:
            return None
        return dt.datetime.strptime(self.first_month, "%Y-%m")

    @property
    def months_words(self) -> str:
        """The months chosen, for a label: "all months", "2024-03", "2024-01 to 2024-06"."""
        first, last = self.first_month, self.last_month
        if first is None and last is None:
            return "all months"
        if first == last:
            return str(first)
        if last is None:
            return f"{first} onwards"
        if first is None:
            return f"up to {last}"
        return f"{first} to {last}"

    @property
    def until_exclusive(self) -> dt.datetime | None:
        """The first instant after the last month (for half-open time ranges)."""
        if self.last_month is None:
            return None
        start = dt.datetime.strptime(self.last_month, "%Y-%m")
        return (start + dt.timedelta(days=32)).replace(day=1)


def months_between(first: dt.datetime, last: dt.datetime) -> list[str]:
    """Every month (``YYYY-MM``) from ``first``'s to ``last``'s, inclusive."""
    out = []
    year, month = first.year, first.month
    while (year, month) <= (last.year, last.month):
        out.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


def current_filters() -> Filters:
    """The filters chosen in the sidebar (defaults when the sidebar has not run yet)."""
    f = st.session_state.get("_filters")
    return f if isinstance(f, Filters) else Filters()


def hash_users() -> bool:
    """Whether user and account names are shown as pseudonyms (setting or sidebar toggle)."""
    return datainfo.hash_users_setting() or bool(st.session_state.get("hash_users", False))


def display_name(name: str | None) -> str | None:
    """A user or account name as the privacy setting allows it to be shown."""
    if not hash_users():
        return name
    return datainfo.pseudonym(name, os.environ.get(datainfo.HASH_SALT_ENV, ""))
