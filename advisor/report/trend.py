"""The loss by month (the dashboard's Trends page): each month's GPU-hours lost to too few CPU
cores, with the model's 90% interval, their price, and the month's measured CPU pressure.

Every month is judged against one answer: today's recommendation per partition and GPU type
over every job loaded (:func:`advisor.recommend.recommend_partitions` under the load asked), so
that a month's change is the jobs' change, not the answer's. A month's loss is the monthly
report's (:func:`advisor.report.tables.starvation_estimates`): the measured jobs lose what their
own CPU pressure held, the model's estimate speaks for the rest.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from advisor import store
from advisor.model.waitknee import DEFAULT_MAX_WAIT
from advisor.progress import ProgressFn, no_progress
from advisor.recommend.query import Workload
from advisor.report.tables import judge_mix

# the keys the monthly rows add before the job mix's own: the month (UTC, by job start), cluster
_MONTH_KEYS = "strftime(date_trunc('month', start), '%Y-%m') AS month, cluster,"


@dataclass(frozen=True)
class LossTrendQuery:
    """Which jobs and under what load: the database, the months, the clusters, partitions and
    GPU types (empty: all), the load the answer is sized for and the wait threshold."""

    db: str | None = None
    start: dt.datetime | None = None  # jobs that started in [start, end), UTC; None: open
    end: dt.datetime | None = None
    clusters: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    gpu_types: tuple[str, ...] = ()
    workload: Workload = Workload()
    max_wait: float = DEFAULT_MAX_WAIT
    model_file: str | None = None
    pricing_file: str | None = None


def loss_by_month(
    q: LossTrendQuery,
    con: Any = None,
    answers: Mapping[tuple[str | None, str], float] | None = None,
    progress: ProgressFn = no_progress,
) -> list[dict[str, Any]]:
    """One row per month, cluster, partition and GPU type with jobs below today's answer: the
    GPU-hours lost and their 90% interval, their price (None where the GPU type has none),
    the GPU-hours below the answer and of every job, and the part measured. Each partition and
    GPU type is judged in one evaluation over all its months (the rows are those the monthly
    report judges one month at a time). ``con``: an open connection to ``q.db`` to read instead
    of opening one (left open); ``answers``: today's ``DefCpuPerGPU`` per (partition, GPU type)
    where the caller has them under ``q``'s load (the dashboard's), else computed here."""
    from advisor.recommend import PartitionQuery, RecommendContext, recommend_partitions

    path = store.resolve_db_path(q.db)
    with RecommendContext.open(
        db=path, fit_file=q.model_file, pricing_file=q.pricing_file, con=con
    ) as ctx:
        progress("answer", 0, 2)
        if answers is None:
            recs = recommend_partitions(
                PartitionQuery(db=str(path), workload=q.workload, max_wait=q.max_wait), ctx=ctx
            )
            answers = {(r.partition, r.gpu_type): float(r.def_cpu_per_gpu) for r in recs.rows}
        params, prices = ctx.params, ctx.book
    own = con is None
    con = store.connect(path, read_only=True) if own else con
    try:
        progress("months", 1, 2)
        rows = con.execute(
            store.render("report/job_mix", keys=_MONTH_KEYS),
            {"start": q.start, "end": q.end, "cluster": None},
        ).fetchall()
        measured = con.execute(
            store.render("recommend/measured_mix", keys=_MONTH_KEYS),
            {"partition": None, "gpu_type": None, "clusters": [], "start": q.start, "end": q.end},
        ).fetchall()
    finally:
        if own:
            con.close()
    mix = {tuple(r[:6]): (float(r[6]), float(r[7]), float(r[8])) for r in measured}
    groups: dict[tuple[str | None, str], list[tuple[Any, ...]]] = defaultdict(list)
    for r in rows:
        chosen = _chosen(r[1], q.clusters) and _chosen(r[2], q.partitions)
        if chosen and _chosen(r[3], q.gpu_types):
            groups[(r[2], r[3])].append(r)
    out = []
    for key, members in groups.items():
        if key in answers:
            out.extend(_group_months(params, prices, key, answers[key], members, mix))
    progress("months", 2, 2)
    out.sort(key=lambda r: (r["month"], r["cluster"], str(r["partition"]), r["gpu_type"]))
    return out


def _group_months(
    params: Any,
    prices: Any,
    key: tuple[str | None, str],
    answer: float,
    members: list[tuple[Any, ...]],
    mix: dict[tuple[Any, ...], tuple[float, float, float]],
) -> list[dict[str, Any]]:
    """One partition and GPU type's rows of every month and cluster judged once against its
    ``answer`` (:func:`advisor.report.tables.judge_mix`), then each (month, cluster)'s
    estimate as the monthly report makes it."""
    import numpy as np

    judged = judge_mix(params, prices, key, answer, members, mix, keys=2)
    at: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, m in enumerate(members):
        at[(m[0], m[1])].append(i)
    out = []
    for (month, cluster), idx in at.items():
        e = judged.estimate(np.array(idx))
        if e is None:
            continue
        usd = e.usd_lost_interval
        low, high = e.gpu_hours_lost_interval
        out.append(
            {
                "month": month,
                "cluster": cluster,
                "partition": e.partition,
                "gpu_type": e.gpu_type,
                "recommended_cores_per_gpu": e.recommended_cores_per_gpu,
                "gpu_hours": e.gpu_hours,
                "gpu_hours_below": e.gpu_hours_below,
                "gpu_hours_lost": e.gpu_hours_lost,
                "gpu_hours_lost_low": low,
                "gpu_hours_lost_high": high,
                "usd_lost": e.usd_lost,
                "usd_lost_low": usd[0] if usd else None,
                "usd_lost_high": usd[1] if usd else None,
                "gpu_hours_measured": e.gpu_hours_measured,
            }
        )
    return out


def _chosen(value: str | None, chosen: Sequence[str]) -> bool:
    return not chosen or (value or "") in chosen
