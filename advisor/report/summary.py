"""The report's answer first: the summary a head of computing reads in 30 seconds (the loss,
its value, the fix, the settings per cluster, what changed since the month before), the
headline that says how far to trust it, and the usage section that evidence comes from."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import duckdb

from advisor import store
from advisor.fixplan import lost_in_starved_jobs
from advisor.headline import (
    Headline,
    MeasuredEvidence,
    UsageEvidence,
    data_age_of,
    headline_of,
    model_error_of,
)
from advisor.recommend import MeasuredMix, PartitionRecommendation
from advisor.report.inputs import ReportInputs
from advisor.report.months import Month
from advisor.report.records import BelowRecommendation, GpuTypeMonth, StarvationEstimate, Summary
from advisor.usage import UsageQuery, UsageReport, prices_of, usage_summary


def month_headline(
    con: duckdb.DuckDBPyConnection,
    month: Month,
    cluster: str | None,
    starvation: Sequence[StarvationEstimate],
    gpu_types: Sequence[GpuTypeMonth],
    inputs: ReportInputs,
    usage: UsageReport,
    now: dt.datetime,
    mix: MeasuredMix,
) -> Headline:
    """The month's loss with its interval (the rows' ends added up: one set of refits judges
    every row, so they rise and fall together), as a share of every GPU-hour the month ran, with the
    calibration of its GPU types, the data's age at ``now``, the usage evidence and what the
    month's measured jobs (``mix``, :func:`advisor.report.tables.month_measured_mix`) held."""
    from advisor import datainfo

    fresh = [f for f in datainfo.freshness(con, now) if cluster is None or f.cluster == cluster]
    priced = [e for e in starvation if e.usd_lost_interval is not None]
    meta = inputs.params.meta if inputs.params is not None else {}
    basis = next((r.decision_basis for r in inputs.recommendations), "2 + N")
    return headline_of(
        gpu_hours_lost=sum(e.gpu_hours_lost for e in starvation),
        gpu_hours_lost_interval=(
            sum(e.gpu_hours_lost_interval[0] for e in starvation),
            sum(e.gpu_hours_lost_interval[1] for e in starvation),
        ),
        gpu_hours=sum(g.gpu_hours for g in gpu_types),
        lost_usd=sum(e.usd_lost or 0.0 for e in starvation),
        lost_usd_interval=(
            sum((e.usd_lost_interval or (0.0, 0.0))[0] for e in priced),
            sum((e.usd_lost_interval or (0.0, 0.0))[1] for e in priced),
        ),
        period=f"in {month.label}",
        decision_basis=basis,
        gpu_types=sorted({e.gpu_type for e in starvation}),
        platforms_seen=meta.get("platforms_seen") or (),
        model_error=model_error_of(meta),
        data_age=data_age_of((t for f in fresh for t in (f.last_submit, f.last_end)), now),
        usage=UsageEvidence(
            gpu_hours_starved=usage.overall.starved_gpu_hours,
            share_gpu_hours_with_usage=usage.advice.share_gpu_hours_with_usage,
            trust=usage.advice.trust,
            gpu_hours_lost_starved=None
            if inputs.params is None or usage.advice.share_gpu_hours_with_usage <= 0
            else lost_in_starved_jobs(
                con,
                inputs.params,
                UsageQuery(
                    by=(), start=month.start, end=month.end, clusters=(cluster,) if cluster else ()
                ),
                {(r.partition, r.gpu_type): r.def_cpu_per_gpu for r in inputs.recommendations},
                keys=("partition", "gpu_type"),
            ),
        ),
        # the month's measured GPU-hours: the same measured_mix the estimates' loss split read
        measured=MeasuredEvidence.of(
            starvation, sum(v[0] for v in mix.values()), sum(g.gpu_hours for g in gpu_types)
        ),
    )


def month_summary(
    starvation: Sequence[StarvationEstimate],
    prev_starvation: Sequence[StarvationEstimate],
    accounts: Sequence[BelowRecommendation],
    gpu_types: Sequence[GpuTypeMonth],
    inputs: ReportInputs,
    clusters_of: dict[tuple[str | None, str], tuple[str, ...]],
    generated_at: dt.datetime,
) -> Summary:
    from advisor.fixplan import settings_for

    lost = sum(e.gpu_hours_lost for e in starvation)
    prev_lost = sum(e.gpu_hours_lost for e in prev_starvation) if prev_starvation else None
    shown = {(e.partition, e.gpu_type) for e in starvation}
    recs = [r for r in inputs.recommendations if (r.partition, r.gpu_type) in shown]
    # one paste per cluster, as on the dashboard: each cluster has its own slurm.conf
    per_cluster: dict[str, list[PartitionRecommendation]] = {}
    for r in recs:
        for c in clusters_of.get((r.partition, r.gpu_type), ()):
            per_cluster.setdefault(c, []).append(r)
    settings = tuple(settings_for(c, per_cluster[c], generated_at) for c in sorted(per_cluster))
    changes = []
    if prev_lost is not None:
        changes.append(
            f"GPU-hours lost: {_hours(lost)} against {_hours(prev_lost)} the month "
            f"before ({_signed_pct(lost, prev_lost)})."
        )
    else:
        changes.append("No estimate for the month before to compare with.")
    for g in gpu_types:
        if g.p50_cores_per_gpu is None or g.prev_p50_cores_per_gpu is None:
            continue
        if g.p50_change_cores_per_gpu:
            changes.append(
                f"{g.gpu_type}: median cores per GPU {g.prev_p50_cores_per_gpu:g} "
                f"→ {g.p50_cores_per_gpu:g}."
            )
        else:
            changes.append(
                f"{g.gpu_type}: median unchanged at {g.p50_cores_per_gpu:g} cores per GPU."
            )
    return Summary(
        gpu_hours_lost=lost,
        usd_lost=sum(e.usd_lost or 0.0 for e in starvation),
        usd_to_fix=sum(e.usd_to_fix for e in starvation),
        prev_gpu_hours_lost=prev_lost,
        top_partitions=tuple(starvation[:3]),
        top_accounts=tuple(accounts[:3]),
        settings=settings,
        changes=tuple(changes),
    )


def partition_clusters(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None
) -> dict[tuple[str | None, str], tuple[str, ...]]:
    """The clusters each (partition, GPU type) of the month's GPU jobs ran in."""
    out: dict[tuple[str | None, str], tuple[str, ...]] = {}
    params = {"start": month.start, "end": month.end, "cluster": cluster}
    for c, partition, gpu_type in con.execute(
        store.query("report/cluster_partitions"), params
    ).fetchall():
        out[(partition, gpu_type)] = (*out.get((partition, gpu_type), ()), str(c))
    return out


def _hours(value: float) -> str:
    return f"{value:,.0f}"


def _signed_pct(now: float, before: float) -> str:
    if before == 0:
        return "none the month before" if now else "none either month"
    return f"{100.0 * (now - before) / before:+.0f}%"


def pressure_section(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None
) -> tuple[dict[str, Any], ...]:
    """The month's measured CPU pressure per GPU type and cores-per-GPU bin (docs/pressure.md),
    or nothing where no job of the month was measured."""
    from advisor.pressure.summary import PressureQuery, pressure_groups

    q = PressureQuery(start=month.start, end=month.end, clusters=(cluster,) if cluster else ())
    rows = pressure_groups(con, q)
    if not any(r["jobs_measured"] for r in rows):
        return ()
    return tuple(rows)


def usage_section(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None, inputs: ReportInputs
) -> UsageReport:
    """What the month's GPU jobs used per GPU type, with the advice on which estimate of
    starvation to trust (usage measured, or the allocation-based one above)."""
    q = UsageQuery(
        by=("gpu_type",),
        start=month.start,
        end=month.end,
        clusters=(cluster,) if cluster else (),
        usd_per_gpu_hour=prices_of(inputs.prices) if inputs.prices else {},
    )
    return usage_summary(con, q)
