"""Cores per GPU of the month per GPU type (``advisor.ratios``): the P25 and P50 against the
month before, and every distinct value with its jobs and GPU-hours for the histogram; also the
ratio query every report table asks (one month by job start, one cluster or all)."""

from __future__ import annotations

import duckdb

from advisor.ratios import (
    DEFAULT_THRESHOLDS,
    RatioGroup,
    RatioQuery,
    ratio_distribution,
    ratio_summary,
)
from advisor.report.months import Month
from advisor.report.records import GpuTypeMonth, RatioCount


def gpu_type_months(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None = None
) -> tuple[GpuTypeMonth, ...]:
    """P25/P50 cores per GPU, jobs and GPU-hours per GPU type, this month and the one before.

    Straight from :func:`advisor.ratios.ratio_summary` (job-weighted, grouped by GPU type);
    GPU types of either month appear, the busiest this month first.
    """
    now = {g.keys["gpu_type"]: g for g in ratio_groups(con, month, cluster, ("gpu_type",))}
    prev = {
        g.keys["gpu_type"]: g for g in ratio_groups(con, month.previous(), cluster, ("gpu_type",))
    }
    order = sorted(now, key=lambda t: (-now[t].jobs, str(t)))
    order += sorted((t for t in prev if t not in now), key=str)
    out = []
    for t in order:
        a, b = now.get(t), prev.get(t)
        p50 = a.p50_cores_per_gpu if a else None
        prev_p50 = b.p50_cores_per_gpu if b else None
        out.append(
            GpuTypeMonth(
                gpu_type=str(t),
                jobs=a.jobs if a else 0,
                gpu_hours=a.gpu_hours if a else 0.0,
                p25_cores_per_gpu=a.p25_cores_per_gpu if a else None,
                p50_cores_per_gpu=p50,
                prev_jobs=b.jobs if b else 0,
                prev_gpu_hours=b.gpu_hours if b else 0.0,
                prev_p25_cores_per_gpu=b.p25_cores_per_gpu if b else None,
                prev_p50_cores_per_gpu=prev_p50,
                p50_change_cores_per_gpu=(
                    p50 - prev_p50 if p50 is not None and prev_p50 is not None else None
                ),
            )
        )
    return tuple(out)


def month_distribution(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None = None
) -> tuple[RatioCount, ...]:
    """Every distinct cores-per-GPU value of the month per GPU type, with its jobs and
    GPU-hours: :func:`advisor.ratios.ratio_distribution`'s ECDF points, without the shares."""
    dist = ratio_distribution(con, ratio_query(month, cluster, ("gpu_type",)))
    return tuple(
        RatioCount(str(g.keys["gpu_type"]), p.cores_per_gpu, p.jobs, p.gpu_hours)
        for g in dist.groups
        for p in g.ecdf
    )


def ratio_query(
    month: Month,
    cluster: str | None,
    by: tuple[str, ...],
    thresholds_cores_per_gpu: tuple[float, ...] | None = None,
) -> RatioQuery:
    """The ratio query behind a report table: one month (by start time), one cluster or all."""
    return RatioQuery(
        by=by,
        start=month.start,
        end=month.end,
        clusters=(cluster,) if cluster else (),
        thresholds_cores_per_gpu=thresholds_cores_per_gpu or DEFAULT_THRESHOLDS,
    )


def ratio_groups(
    con: duckdb.DuckDBPyConnection,
    month: Month,
    cluster: str | None,
    by: tuple[str, ...],
    thresholds_cores_per_gpu: tuple[float, ...] | None = None,
) -> tuple[RatioGroup, ...]:
    """The groups of :func:`ratio_summary` for :func:`ratio_query`'s month, cluster and keys."""
    q = ratio_query(month, cluster, by, thresholds_cores_per_gpu)
    return ratio_summary(con, q).groups
