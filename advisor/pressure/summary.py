"""Measured CPU pressure of a cluster's GPU jobs per group (GPU type and cores-per-GPU bin by
default): how many jobs and GPU-hours are measured, their stall shares, and the GPU-hours held
by CPU waiting between the ``full`` and ``some`` bounds (``advisor/sql/pressure/summary.sql``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from advisor.derived.usage_months import UsageThresholds, facts_params, facts_sql
from advisor.errors import UsageError
from advisor.filters import JOB_GROUP_KEYS, JobFilters
from advisor.store import connect, query, quote_ident, render

GROUP_KEYS: tuple[str, ...] = (*JOB_GROUP_KEYS, "cores_per_gpu_bin")


@dataclass(frozen=True)
class PressureQuery(JobFilters):
    """What to summarise: the grouping, the stall share from which a job counts as stalled, and
    the job filters of :class:`advisor.filters.JobFilters`."""

    by: tuple[str, ...] = ("gpu_type", "cores_per_gpu_bin")
    thresholds: UsageThresholds = UsageThresholds()


def any_records(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether any pressure record was loaded: without one, :func:`pressure_groups` finds no
    measured job for any filter, and a page may leave its scan of every job out."""
    row = con.execute(query("pressure/any_records")).fetchone()
    return bool(row and row[0])


def pressure_groups(con: duckdb.DuckDBPyConnection, q: PressureQuery) -> list[dict[str, Any]]:
    """One row per group (see the module docstring); groups without a measured job included,
    so the share measured is visible."""
    bad = [k for k in q.by if k not in GROUP_KEYS]
    if bad:
        raise UsageError(f"--by {','.join(bad)}: choose from {', '.join(GROUP_KEYS)}")
    q.thresholds.check()
    keys = "".join(f"{quote_ident(k)}, " for k in q.by)
    order = ", ".join(quote_ident(k) for k in q.by) or "jobs DESC"
    sql = render("pressure/summary", facts=facts_sql(), keys=keys, order=order)
    cur = con.execute(sql, facts_params(q, q.thresholds))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def pressure_summary(
    db: str | os.PathLike[str] | None, q: PressureQuery = PressureQuery()
) -> list[dict[str, Any]]:
    """:func:`pressure_groups` of the database file ``db``, opened read-only."""
    con = connect(db, read_only=True)
    try:
        return pressure_groups(con, q)
    finally:
        con.close()


def headline(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Totals over the groups: jobs and GPU-hours measured, and the held GPU-hours' bounds."""
    gpu_hours = sum(r["gpu_hours"] or 0 for r in rows)
    measured = sum(r["gpu_hours_measured"] or 0 for r in rows)
    return {
        "jobs": sum(r["jobs"] for r in rows),
        "jobs_measured": sum(r["jobs_measured"] for r in rows),
        "gpu_hours": gpu_hours,
        "gpu_hours_measured": measured,
        "share_measured": measured / gpu_hours if gpu_hours else None,
        "held_gpu_hours_low": sum(r["held_gpu_hours_low"] for r in rows),
        "held_gpu_hours_high": sum(r["held_gpu_hours_high"] for r in rows),
    }
