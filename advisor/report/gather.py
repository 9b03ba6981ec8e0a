"""Gathering the monthly report: the month chosen (and the one before it), and every number
of the report collected into one frozen :class:`MonthlyReport` through the core functions
(ratios, recommend, the curve, pricing, the policy, data quality).

Every number the report shows is a field of :class:`MonthlyReport`; rendering
(:mod:`advisor.report.render`) and publishing (:mod:`advisor.report.publish`) add none.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb

from advisor import store
from advisor.errors import AdvisorError, NotFoundError, UsageError
from advisor.fixplan import ClusterFix, lost_in_starved_jobs
from advisor.headline import Headline, UsageEvidence, data_age_of, headline_of
from advisor.policy import Policy, read_policy
from advisor.pricing import PriceBook
from advisor.progress import ProgressFn, no_progress
from advisor.ratios import (
    DEFAULT_THRESHOLDS,
    RatioGroup,
    RatioQuery,
    TargetQuery,
    below_target,
    ratio_distribution,
    ratio_summary,
)
from advisor.recommend import PartitionRecommendation
from advisor.slowdown import CurveParams
from advisor.usage import UsageQuery, UsageReport, prices_of, usage_summary

_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")


# --------------------------------------------------------------------------------------------
# Configuration and months


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
    known = {name: int(jobs) for name, jobs in _rows(con, "clusters", [])}
    if not known.get(cluster):
        raise NotFoundError(
            f"--cluster {cluster!r}: no such cluster in the database; have {sorted(known)}"
        )


def available_months(con: duckdb.DuckDBPyConnection, cluster: str | None = None) -> list[Month]:
    """Every month in which a GPU allocation started (of ``cluster``, or of any), oldest first."""
    rows = con.execute(store.query("report/months"), [cluster]).fetchall()
    return [parse_month(f"{d.year:04d}-{d.month:02d}") for (d,) in rows]


# --------------------------------------------------------------------------------------------
# The report's data: every number it shows


@dataclass(frozen=True)
class GpuTypeMonth:
    """Cores per GPU of one GPU type, this month against the month before."""

    gpu_type: str
    jobs: int
    gpu_hours: float
    p25_cores_per_gpu: float | None
    p50_cores_per_gpu: float | None
    prev_jobs: int
    prev_gpu_hours: float
    prev_p25_cores_per_gpu: float | None
    prev_p50_cores_per_gpu: float | None
    p50_change_cores_per_gpu: float | None  # this month's P50 minus last month's


@dataclass(frozen=True)
class RatioCount:
    """Jobs and GPU-hours of one GPU type at one distinct cores-per-GPU value (the month)."""

    gpu_type: str
    cores_per_gpu: float
    jobs: int
    gpu_hours: float


@dataclass(frozen=True)
class BelowRecommendation:
    """An account or partition whose jobs ask for fewer cores per GPU than recommended."""

    scope: str  # "account" | "partition"
    name: str  # the account's or the partition's name
    partition: str | None  # the partition whose recommendation applies
    gpu_type: str
    jobs: int
    jobs_below: int
    gpu_hours_below: float
    p50_cores_per_gpu: float | None
    recommended_cores_per_gpu: float
    flag: str  # what their job scripts should say, e.g. "--cpus-per-gpu=8"
    gpu_hours_lost: float = 0.0  # the part of gpu_hours_below estimated lost (fixplan.lost_share)


@dataclass(frozen=True)
class StarvationEstimate:
    """GPU time lost to too few cores per GPU, and the price of the cores that would fix it."""

    partition: str | None
    gpu_type: str
    recommended_cores_per_gpu: float
    gpu_hours_below: float  # GPU-hours of jobs below the recommendation
    gpu_hours_lost: float  # the part of those spent waiting on the CPU (model estimate)
    extra_cpu_hours: float  # core-hours needed to bring those jobs up to the recommendation
    usd_per_vcpu_hour: float
    usd_to_fix: float  # extra_cpu_hours x usd_per_vcpu_hour
    usd_per_gpu_hour: float | None
    usd_lost: float | None  # gpu_hours_lost x usd_per_gpu_hour
    gpu_hours_lost_interval: tuple[float, float] = (0.0, 0.0)  # 5-95% over the fit's refits
    gpu_hours: float = 0.0  # every GPU-hour of the group's jobs in the month, below or not

    @property
    def usd_lost_interval(self) -> tuple[float, float] | None:
        if self.usd_per_gpu_hour is None:
            return None
        lo, hi = self.gpu_hours_lost_interval
        return lo * self.usd_per_gpu_hour, hi * self.usd_per_gpu_hour


@dataclass(frozen=True)
class PolicyRuleCompliance:
    """How the month's jobs matched one rule of the exported policy."""

    partition: str
    gpu_type: str
    mode: str
    min_cpus_per_gpu: float
    jobs: int
    jobs_compliant: int
    share_compliant: float | None


@dataclass(frozen=True)
class PolicyCompliance:
    """Jobs of the month against the exported CPU-per-GPU policy (docs/policy-format.md)."""

    source: str
    generated_at: str | None
    jobs: int
    jobs_compliant: int
    share_compliant: float | None
    rules: tuple[PolicyRuleCompliance, ...]


@dataclass(frozen=True)
class MonthIngest:
    """A load that brought in some of the month's allocations."""

    ingest_id: int
    source: str
    format: str
    status: str
    rows_read: int
    inserted: int
    updated: int
    unchanged: int
    rejected: int
    missing_fields: tuple[str, ...]
    disabled_analyses: tuple[str, ...]


@dataclass(frozen=True)
class RejectGroup:
    """Rejected lines of those loads that share a reason, with the first place it happened."""

    reason: str
    field: str | None
    lines: int
    first_source: str | None
    first_line_no: int | None


@dataclass(frozen=True)
class TimeGap:
    """A run of whole UTC days with no allocation starting: missing accounting data, or an outage."""

    first_day: dt.date
    last_day: dt.date
    days: int


@dataclass(frozen=True)
class DayCount:
    """Allocations started on one UTC day."""

    day: dt.date
    jobs: int
    gpu_jobs: int


@dataclass(frozen=True)
class DataQuality:
    """What the month's numbers stand on: the loads, their rejected lines, gaps in time."""

    jobs: int
    gpu_jobs: int
    ingests: tuple[MonthIngest, ...]
    rejected_lines: int
    rejects: tuple[RejectGroup, ...]
    gaps: tuple[TimeGap, ...]
    gap_days: int
    daily: tuple[DayCount, ...]


SMALL_SAMPLE_JOBS = 30  # fewer GPU jobs than this in a month: its percentiles move a lot


@dataclass(frozen=True)
class Summary:
    """What a head of computing reads in 30 seconds: the loss, its value, the fix, where it
    happens, the settings that fix it, and what changed since last month."""

    gpu_hours_lost: float
    usd_lost: float  # priced GPU types only
    usd_to_fix: float
    prev_gpu_hours_lost: float | None  # None: no estimate for the month before
    top_partitions: tuple[StarvationEstimate, ...]  # the three losing the most GPU-hours
    top_accounts: tuple[BelowRecommendation, ...]  # the three most GPU-hours below
    settings: tuple[ClusterFix, ...]  # per cluster: slurm.conf lines that set the recommendations
    changes: tuple[str, ...]  # sentences: what moved since the month before
    headline: Headline | None = None  # the loss's interval, share, calibration, data age, basis


@dataclass(frozen=True)
class MonthlyReport:
    """Everything one monthly report shows; rendering adds no number of its own."""

    month: str
    previous_month: str
    cluster: str | None
    generated_at: dt.datetime
    gpu_types: tuple[GpuTypeMonth, ...]
    distribution: tuple[RatioCount, ...]  # the month's ratios per GPU type (for the histogram)
    below_accounts: tuple[BelowRecommendation, ...]
    below_partitions: tuple[BelowRecommendation, ...]
    starvation: tuple[StarvationEstimate, ...]
    gpu_hours_lost_total: float  # sum over ``starvation``
    usd_to_fix_total: float  # sum over ``starvation``
    starvation_assumptions: tuple[str, ...]
    starvation_warnings: tuple[str, ...]  # recommend's warnings for the rows shown (extrapolation)
    policy: PolicyCompliance | None
    quality: DataQuality
    notes: tuple[str, ...] = field(default_factory=tuple)  # sections that could not be computed
    summary: Summary | None = None
    prev_distribution: tuple[RatioCount, ...] = ()  # the month before (overlaid on the histogram)
    no_records: bool = False  # not one allocation started in the month (of the cluster)
    small_sample: bool = False  # fewer than SMALL_SAMPLE_JOBS GPU allocations
    usage: UsageReport | None = None  # what the month's GPU jobs used (issue 23)


@dataclass(frozen=True)
class ReportResult:
    """One report written: where, and what it holds."""

    month: str
    cluster: str | None
    html_path: Path
    image_paths: tuple[Path, ...]
    gpu_jobs: int
    html_sha256: str


# --------------------------------------------------------------------------------------------
# Building the data


def _rows(con: duckdb.DuckDBPyConnection, name: str, params: Sequence[object]) -> list[tuple]:
    return con.execute(store.query(f"report/{name}"), list(params)).fetchall()


def data_quality(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None = None
) -> DataQuality:
    """The month's loads, their rejected lines by reason, and the days with no data at all."""
    params = [month.start, month.end, cluster]
    daily = tuple(DayCount(d, int(j), int(g)) for d, j, g in _rows(con, "daily_starts", params))
    ingests = tuple(
        MonthIngest(
            int(r[0]),
            r[1],
            r[2],
            r[3],
            int(r[4]),
            int(r[5]),
            int(r[6]),
            int(r[7]),
            int(r[8]),
            tuple(r[9]),
            tuple(r[10]),
        )
        for r in _rows(con, "month_ingests", params)
    )
    rejects = tuple(
        RejectGroup(r[0], r[1], int(r[2]), r[3], None if r[4] is None else int(r[4]))
        for r in _rows(con, "month_rejects", params)
    )
    gaps = tuple(TimeGap(a, b, int(n)) for a, b, n in _rows(con, "gaps", params))
    return DataQuality(
        jobs=sum(d.jobs for d in daily),
        gpu_jobs=sum(d.gpu_jobs for d in daily),
        ingests=ingests,
        rejected_lines=sum(r.lines for r in rejects),
        rejects=rejects,
        gaps=gaps,
        gap_days=sum(g.days for g in gaps),
        daily=daily,
    )


def gpu_type_months(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None = None
) -> tuple[GpuTypeMonth, ...]:
    """P25/P50 cores per GPU, jobs and GPU-hours per GPU type, this month and the one before.

    Straight from :func:`advisor.ratios.ratio_summary` (job-weighted, grouped by GPU type);
    GPU types of either month appear, the busiest this month first.
    """
    now = {g.keys["gpu_type"]: g for g in _ratio_groups(con, month, cluster, ("gpu_type",))}
    prev = {
        g.keys["gpu_type"]: g for g in _ratio_groups(con, month.previous(), cluster, ("gpu_type",))
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


def _ratio_groups(
    con: duckdb.DuckDBPyConnection,
    month: Month,
    cluster: str | None,
    by: tuple[str, ...],
    thresholds_cores_per_gpu: tuple[float, ...] | None = None,
) -> tuple[RatioGroup, ...]:
    q = ratio_query(month, cluster, by, thresholds_cores_per_gpu)
    return ratio_summary(con, q).groups


@dataclass(frozen=True)
class ReportInputs:
    """What a report uses besides the month's jobs: the partition recommendations (from
    :func:`advisor.recommend.recommend_partitions`), the fitted model, the prices, the policy."""

    recommendations: tuple[PartitionRecommendation, ...] = ()
    recommendation_assumptions: tuple[str, ...] = ()
    params: CurveParams | None = None
    prices: PriceBook | None = None
    policy: Policy | None = None
    policy_source: str | None = None


def load_inputs(config: ReportConfig, db: str | os.PathLike[str] | None = None) -> ReportInputs:
    """Recommendations over every job in the database, the model, the prices and the policy."""
    from advisor.recommend import PartitionQuery, RecommendContext, recommend_partitions

    path = store.resolve_db_path(db)
    model_file = str(config.model_file) if config.model_file else None
    pricing_file = str(config.pricing_file) if config.pricing_file else None
    with RecommendContext.open(db=path, fit_file=model_file, pricing_file=pricing_file) as ctx:
        params, prices = ctx.params, ctx.book
        recs = recommend_partitions(PartitionQuery(db=str(path)), ctx=ctx)
    # The report prices the month itself, so recommend's per-month scaling does not apply.
    assumptions = tuple(
        f"{k.replace('_', ' ')}: {_assumption_text(v)}"
        for k, v in recs.assumptions.items()
        if k != "per_month"
    )
    policy = read_policy(config.policy_file) if config.policy_file else None
    return ReportInputs(
        recommendations=recs.rows,
        recommendation_assumptions=assumptions,
        params=params,
        prices=prices,
        policy=policy,
        policy_source=str(config.policy_file) if config.policy_file else None,
    )


def _assumption_text(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def _rec_index(inputs: ReportInputs) -> dict[tuple[str | None, str], PartitionRecommendation]:
    return {(r.partition, r.gpu_type): r for r in inputs.recommendations}


def below_recommendation(
    con: duckdb.DuckDBPyConnection,
    month: Month,
    cluster: str | None,
    inputs: ReportInputs,
    top_n: int = 10,
) -> tuple[tuple[BelowRecommendation, ...], tuple[BelowRecommendation, ...]]:
    """Accounts and partitions whose jobs sit below their (partition, GPU type)'s recommended
    cores per GPU (at most ``top_n`` each).

    Accounts are the dashboard's Who ranking: :func:`advisor.ratios.below_target` ranked by
    :func:`advisor.fixplan.rank_who_loses`, most GPU-hours lost first. Partitions come from
    :func:`advisor.ratios.ratio_summary` with the recommended values as thresholds (jobs below
    = share of jobs below x jobs, GPU-hours below likewise), most GPU-hours below first.
    """
    from advisor import fixplan

    recs = _rec_index(inputs)
    if not recs:
        return (), ()
    # Accounts: the dashboard's Who ranking (fixplan.rank_who_loses), most GPU-hours lost first.
    tq = TargetQuery(
        ratio_query(month, cluster, ("account", "partition", "gpu_type")),
        targets_cores_per_gpu=fixplan.recommended_targets(recs),
        top=max(fixplan.RANKING_POOL, top_n),
    )
    accounts = tuple(
        BelowRecommendation(
            scope="account",
            name=str(w.group.keys["account"]),
            partition=w.group.keys["partition"],
            gpu_type=str(w.group.keys["gpu_type"]),
            jobs=w.group.jobs,
            jobs_below=w.jobs_below,
            gpu_hours_below=w.gpu_hours_below,
            p50_cores_per_gpu=w.group.p50_cores_per_gpu,
            recommended_cores_per_gpu=w.target_cores_per_gpu,
            flag=w.flag,
            gpu_hours_lost=w.gpu_hours_lost,
        )
        for w in fixplan.rank_who_loses(below_target(con, tq), recs)[:top_n]
    )
    thresholds = tuple(sorted({float(r.def_cpu_per_gpu) for r in recs.values()}))
    rows = []
    for g in _ratio_groups(con, month, cluster, ("partition", "gpu_type"), thresholds):
        rec = recs.get((g.keys["partition"], g.keys["gpu_type"]))
        if rec is None:
            continue
        t = float(rec.def_cpu_per_gpu)
        jobs_below = round(g.share_jobs_below[t] * g.jobs)
        share_h = g.share_gpu_hours_below[t]
        if jobs_below == 0:
            continue
        below_h = (share_h * g.gpu_hours) if math.isfinite(share_h) else 0.0
        rows.append(
            BelowRecommendation(
                scope="partition",
                name=str(g.keys["partition"]),
                partition=g.keys["partition"],
                gpu_type=str(g.keys["gpu_type"]),
                jobs=g.jobs,
                jobs_below=jobs_below,
                gpu_hours_below=below_h,
                p50_cores_per_gpu=g.p50_cores_per_gpu,
                recommended_cores_per_gpu=t,
                flag=f"--cpus-per-gpu={rec.def_cpu_per_gpu}",
                gpu_hours_lost=below_h
                * fixplan.lost_share(recs, g.keys["partition"], str(g.keys["gpu_type"])),
            )
        )
    rows.sort(key=lambda b: (-b.gpu_hours_below, -b.jobs_below, b.name, b.gpu_type))
    return accounts, tuple(rows[:top_n])


def starvation_estimates(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None, inputs: ReportInputs
) -> tuple[StarvationEstimate, ...]:
    """Per (partition, GPU type): GPU time the month's jobs below the recommendation lost to
    CPU starvation, and what the missing cores would have cost.

    The loss and the missing cores are :func:`advisor.recommend.starvation`'s, the formula
    of :func:`advisor.recommend.recommend_partitions`; the fix is priced at the per-vCPU
    price, the loss at the reference instance's $ per GPU-hour.
    """
    import numpy as np

    from advisor.recommend import starvation

    recs = _rec_index(inputs)
    if not recs or inputs.params is None or inputs.prices is None:
        return ()
    params, prices = inputs.params, inputs.prices
    rows = con.execute(
        store.query("report/job_mix"), {"start": month.start, "end": month.end, "cluster": cluster}
    ).fetchall()
    groups: dict[tuple[str | None, str], list[tuple]] = {}
    for r in rows:
        groups.setdefault((r[0], r[1]), []).append(r)
    usd_vcpu = prices.vcpu.usd_per_vcpu_hour
    out = []
    for key, members in groups.items():
        rec = recs.get(key)
        if rec is None:
            continue
        partition, gpu_type = key
        dflt = float(rec.def_cpu_per_gpu)
        platform = None if gpu_type == "(untyped)" else gpu_type
        gpu_h = np.array([float(m[6]) for m in members])
        starved = starvation(
            params,
            cpus=[m[2] for m in members],
            gpus=[m[3] for m in members],
            gpu_hours=gpu_h,
            elapsed_s=[m[5] for m in members],
            recommended_cores_per_gpu=dflt,
            platform=platform,
        )
        below = starved.below
        if not below.any():
            continue
        extra = starved.fix_vcpu_hours
        lost = starved.gpu_hours_lost
        try:
            usd_gpu: float | None = prices.instance_for(platform or "").usd_per_gpu_hour
        except AdvisorError:
            usd_gpu = None
        out.append(
            StarvationEstimate(
                partition=partition,
                gpu_type=gpu_type,
                recommended_cores_per_gpu=dflt,
                gpu_hours_below=float(gpu_h[below].sum()),
                gpu_hours_lost=lost,
                extra_cpu_hours=extra,
                usd_per_vcpu_hour=usd_vcpu,
                usd_to_fix=extra * usd_vcpu,
                usd_per_gpu_hour=usd_gpu,
                usd_lost=lost * usd_gpu if usd_gpu is not None else None,
                gpu_hours_lost_interval=starved.gpu_hours_lost_interval(),
                gpu_hours=float(gpu_h.sum()),
            )
        )
    out.sort(key=lambda e: (-e.gpu_hours_lost, str(e.partition), e.gpu_type))
    return tuple(out)


def policy_compliance(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None, inputs: ReportInputs
) -> PolicyCompliance | None:
    """The month's GPU jobs against the exported policy (None when no policy is given)."""
    policy = inputs.policy
    if policy is None:
        return None
    rules = policy.rules
    params = {
        "start": month.start,
        "end": month.end,
        "cluster": cluster,
        "rule_no": list(range(len(rules))),
        "rule_partition": [r.partition for r in rules],
        "rule_gpu_type": [r.gpu_type for r in rules],
        "rule_min": [float(r.min_cpus_per_gpu) for r in rules],
    }
    counts = {
        int(n): (int(j), int(c))
        for n, j, c in con.execute(store.query("report/policy_compliance"), params).fetchall()
    }
    out = []
    for i, r in enumerate(rules):
        jobs, ok = counts.get(i, (0, 0))
        if jobs == 0:
            continue
        out.append(
            PolicyRuleCompliance(
                partition=r.partition,
                gpu_type=r.gpu_type,
                mode=str(r.mode.value),
                min_cpus_per_gpu=float(r.min_cpus_per_gpu),
                jobs=jobs,
                jobs_compliant=ok,
                share_compliant=ok / jobs,
            )
        )
    jobs = sum(r.jobs for r in out)
    ok = sum(r.jobs_compliant for r in out)
    return PolicyCompliance(
        source=inputs.policy_source or policy.source,
        generated_at=policy.generated_at or None,
        jobs=jobs,
        jobs_compliant=ok,
        share_compliant=ok / jobs if jobs else None,
        rules=tuple(out),
    )


def _warnings_for(estimates: Sequence[StarvationEstimate], inputs: ReportInputs) -> tuple[str, ...]:
    """The recommendations' own warnings for the (partition, GPU type) rows the report shows."""
    recs = _rec_index(inputs)
    out: dict[str, None] = {}
    for e in estimates:
        rec = recs.get((e.partition, e.gpu_type))
        for w in rec.warnings if rec else ():
            out[f"{e.partition or '(no partition)'} / {e.gpu_type}: {w}"] = None
    return tuple(out)


def build_report(
    con: duckdb.DuckDBPyConnection,
    month: Month,
    cluster: str | None = None,
    inputs: ReportInputs | None = None,
    *,
    top_n: int = 10,
    now: dt.datetime | None = None,
    progress: ProgressFn = no_progress,
) -> MonthlyReport:
    """Gather every number of one month's report from the core functions.

    Without ``inputs`` (see :func:`load_inputs`) the sections that need recommendations, the
    model or a policy stay empty and the report says why.
    """
    inputs = inputs or ReportInputs()
    label = f"report {month.label}"
    steps = 5
    notes: list[str] = []
    progress(label, 0, steps)
    gpu_types = gpu_type_months(con, month, cluster)
    distribution = month_distribution(con, month, cluster)
    progress(label, 1, steps)
    accounts, partitions = below_recommendation(con, month, cluster, inputs, top_n)
    if not inputs.recommendations:
        notes.append(
            "No partition recommendations (no GPU jobs in the database, or none "
            "given): the sections that compare against them are empty."
        )
    progress(label, 2, steps)
    starvation = starvation_estimates(con, month, cluster, inputs)
    progress(label, 3, steps)
    policy = policy_compliance(con, month, cluster, inputs)
    progress(label, 4, steps)
    quality = data_quality(con, month, cluster)
    prev_distribution = month_distribution(con, month.previous(), cluster)
    prev_starvation = starvation_estimates(con, month.previous(), cluster, inputs)
    progress(label, 5, steps)
    no_records = quality.jobs == 0
    small = not no_records and quality.gpu_jobs < SMALL_SAMPLE_JOBS
    if small:  # (a month with no records says so once, in the summary)
        notes.append(
            f"Small sample: only {quality.gpu_jobs:,} GPU allocation"
            f"{'s' if quality.gpu_jobs != 1 else ''} started in "
            f"{month.label}; percentiles and shares of so few jobs move a lot from "
            "month to month."
        )
    assumptions = _assumptions_in_words(inputs)
    generated = (now or dt.datetime.now(dt.UTC)).replace(tzinfo=None, microsecond=0)
    usage = usage_section(con, month, cluster, inputs)
    return MonthlyReport(
        month=month.label,
        previous_month=month.previous().label,
        cluster=cluster,
        generated_at=generated,
        gpu_types=gpu_types,
        distribution=distribution,
        below_accounts=accounts,
        below_partitions=partitions,
        starvation=starvation,
        gpu_hours_lost_total=sum(e.gpu_hours_lost for e in starvation),
        usd_to_fix_total=sum(e.usd_to_fix for e in starvation),
        starvation_assumptions=assumptions if starvation else (),
        starvation_warnings=_warnings_for(starvation, inputs),
        policy=policy,
        quality=quality,
        notes=tuple(notes),
        summary=replace(
            _summary(
                starvation,
                prev_starvation,
                accounts,
                gpu_types,
                inputs,
                _clusters_of(con, month, cluster),
                generated,
            ),
            headline=month_headline(
                con, month, cluster, starvation, gpu_types, inputs, usage, generated
            ),
        )
        if inputs.recommendations
        else None,
        prev_distribution=prev_distribution,
        no_records=no_records,
        small_sample=small,
        usage=usage,
    )


def month_headline(
    con: duckdb.DuckDBPyConnection,
    month: Month,
    cluster: str | None,
    starvation: Sequence[StarvationEstimate],
    gpu_types: Sequence[GpuTypeMonth],
    inputs: ReportInputs,
    usage: UsageReport,
    now: dt.datetime,
) -> Headline:
    """The month's loss with its interval (the rows' ends added up: one set of refits judges
    every row, so they rise and fall together), as a share of every GPU-hour the month ran, with the
    calibration of its GPU types, the data's age at ``now`` and the usage evidence."""
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
    )


def _assumptions_in_words(inputs: ReportInputs) -> tuple[str, ...]:
    """What the estimates assume, as an admin would explain them to a head of computing."""
    from advisor import slowdown

    out = [
        "A job belongs to the month it started in (UTC) and counts whole, even when it ran on.",
        "Recommended cores per GPU: per partition and GPU type, the fewest cores that keep "
        "time-to-first-token within 10% of what unlimited cores give, judged over every job "
        "in the database.",
        f"The estimate treats every GPU job as an LLM server of a model of "
        f"{slowdown.REF_MODEL_PARAMS_B:g}B parameters taking {slowdown.REF_LOAD_RPS:g} long "
        f"requests per second of {int(slowdown.REF_PROMPT_TOKENS):,} prompt tokens.",
        "GPU time lost: for each job below the recommendation, the part of its GPU time the "
        "model says is spent waiting for the CPU. Training and batch jobs wait less, so this "
        "is an upper bound for them.",
    ]
    if inputs.prices is not None:
        v = inputs.prices.vcpu
        out.append(
            f"Cost of the fix: the extra cores those jobs would have held, at "
            f"${v.usd_per_vcpu_hour:.3f} per vCPU-hour ({v.basis}, prices of "
            f"{v.as_of.isoformat()})."
        )
        out.append(
            "Value of the GPU time lost: at the cloud price of the same GPU "
            "(the reference instance's price per GPU-hour)."
        )
    return tuple(out)


def _summary(
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


def _clusters_of(
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
