"""The job filters that every query over ``jobs`` shares, and their bound parameters.

Owns :class:`JobFilters` (the nine filters a ratio query and a usage query both take, and the
derived tables' builders bind empty), :data:`JOB_GROUP_KEYS` (the job columns both can group
by), :func:`query_params` (the filters as DuckDB parameters), :func:`jobs_where` (the one SQL
condition they bind to) and :func:`utc_naive` (how a time is compared with the naive UTC
columns of ``jobs``). It imports no room but the store's SQL reader, so the analytics, the
advice and the derived tables can all use it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any

from advisor.store import render

JOB_GROUP_KEYS: tuple[str, ...] = (
    "gpu_type",
    "cluster",
    "partition",
    "account",
    "user",
    "month",
    "gpu_count",
)
"""The job columns a ratio summary and a usage summary can both be grouped by; each adds keys
of its own (``interactive``; ``cores_per_gpu_bin``)."""


@dataclass(frozen=True, kw_only=True)
class JobFilters:
    """Which jobs a query reads; empty tuples and None mean "no filter". ``start``/``end``
    select jobs whose start time (UTC; naive datetimes are taken as UTC) lies in
    ``[start, end)``. Keyword-only, so that a query inheriting them keeps its own fields'
    positions."""

    start: dt.datetime | None = None
    end: dt.datetime | None = None
    states: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    gpu_types: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    min_gpus: int | None = None

    def job_filters(self) -> dict[str, Any]:
        """The filters alone, by name: what another query built from this one takes."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(JobFilters)}


def utc_naive(t: dt.datetime | None) -> dt.datetime | None:
    """``t`` as a naive UTC time (a naive one is taken as UTC already), as ``jobs`` holds them."""
    if t is None or t.tzinfo is None:
        return t
    return t.astimezone(dt.UTC).replace(tzinfo=None)


def query_params(q: JobFilters) -> dict[str, Any]:
    """The bound parameters of the job filters (times as naive UTC), for any query that has them."""
    return {
        "start": utc_naive(q.start),
        "end": utc_naive(q.end),
        "states": [s.upper() for s in q.states],
        "partitions": list(q.partitions),
        "clusters": list(q.clusters),
        "gpu_types": list(q.gpu_types),
        "accounts": list(q.accounts),
        "users": list(q.users),
        "min_gpus": q.min_gpus,
    }


def jobs_where(time: str) -> str:
    """The SQL condition of the job filters on ``jobs AS j`` (``filters/jobs_where.sql``),
    bound by :func:`query_params`; ``time`` is the SQL expression the window applies to, chosen
    by the code (``j.start``, or ``coalesce(j.start, j.submit)``), never user input."""
    return render("filters/jobs_where", time=time)
