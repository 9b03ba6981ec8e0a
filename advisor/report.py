"""The monthly batch report: one self-contained HTML file per month (and cluster).

Owns: choosing the month (and the one before it), gathering every number of the report into
one frozen :class:`MonthlyReport` through the core functions (ratios, recommend, model,
pricing, policy, data quality), rendering it to HTML with its charts embedded (the Vega
JavaScript inlined from vl-convert's bundle, so the file opens offline with no CDN), writing
PNG/PDF copies of the charts (vl-convert), and the ``--all-months`` backlog.

Layout on disk: ``OUT/<YYYY-MM>/report.html`` (``OUT/<YYYY-MM>--<cluster>/`` for one cluster),
with ``<chart>.png`` / ``<chart>.pdf`` next to it, and ``OUT/index.json`` (and ``index.html``)
listing every report.
Writing a month again replaces its folder as a whole (built aside, then swapped in), so no file
of an older run survives next to a newer report.

Every number shown is a field of :class:`MonthlyReport`; the HTML carries each one in a
``data-key``/``data-value`` attribute pair so tests (and scripts) can read them back exactly.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from advisor import store
from advisor.errors import (
    AdvisorError,
    ExternalToolError,
    InputError,
    NotFoundError,
    UsageError,
)
from advisor.policy import Policy
from advisor.pricing import PriceBook
from advisor.progress import ProgressFn, no_progress
from advisor.ratios import (
    DEFAULT_THRESHOLDS,
    RatioGroup,
    RatioQuery,
    ratio_distribution,
    ratio_summary,
)
from advisor.recommend import PartitionRecommendation
from advisor.slowdown import CurveParams
from advisor.usage import UsageQuery, UsageReport, prices_of, usage_summary

_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")
_SAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")


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
    settings: str  # slurm.conf lines that set the recommendations
    changes: tuple[str, ...]  # sentences: what moved since the month before


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
            int(r[0]), r[1], r[2], r[3], int(r[4]), int(r[5]), int(r[6]), int(r[7]), int(r[8]),
            tuple(r[9]), tuple(r[10]),
        )
        for r in _rows(con, "month_ingests", params)
    )  # fmt: skip
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
    from advisor.pricing import load_pricing
    from advisor.recommend import PartitionQuery, recommend_partitions
    from advisor.slowdown import load_params

    path = store.resolve_db_path(db)
    model_file = str(config.model_file) if config.model_file else None
    pricing_file = str(config.pricing_file) if config.pricing_file else None
    params = load_params(model_file)
    prices = load_pricing(pricing_file)
    recs = recommend_partitions(
        PartitionQuery(db=str(path), pricing_file=pricing_file, model_file=model_file)
    )
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
    cores per GPU, most GPU-hours below first (at most ``top_n`` each).

    Counts come from :func:`advisor.ratios.ratio_summary` with the recommended values as
    thresholds: jobs below = share of jobs below x jobs, GPU-hours below likewise.
    """
    recs = _rec_index(inputs)
    if not recs:
        return (), ()
    thresholds = tuple(sorted({float(r.def_cpu_per_gpu) for r in recs.values()}))
    out: list[tuple[BelowRecommendation, ...]] = []
    for scope, by in (
        ("account", ("account", "partition", "gpu_type")),
        ("partition", ("partition", "gpu_type")),
    ):
        rows = []
        for g in _ratio_groups(con, month, cluster, by, thresholds):
            rec = recs.get((g.keys["partition"], g.keys["gpu_type"]))
            if rec is None:
                continue
            t = float(rec.def_cpu_per_gpu)
            jobs_below = round(g.share_jobs_below[t] * g.jobs)
            share_h = g.share_gpu_hours_below[t]
            if jobs_below == 0:
                continue
            rows.append(
                BelowRecommendation(
                    scope=scope,
                    name=str(g.keys[scope]),
                    partition=g.keys["partition"],
                    gpu_type=str(g.keys["gpu_type"]),
                    jobs=g.jobs,
                    jobs_below=jobs_below,
                    gpu_hours_below=(share_h * g.gpu_hours) if math.isfinite(share_h) else 0.0,
                    p50_cores_per_gpu=g.p50_cores_per_gpu,
                    recommended_cores_per_gpu=t,
                    flag=f"--cpus-per-gpu={rec.def_cpu_per_gpu}",
                )
            )
        rows.sort(key=lambda b: (-b.gpu_hours_below, -b.jobs_below, b.name, b.gpu_type))
        out.append(tuple(rows[:top_n]))
    return out[0], out[1]


def starvation_estimates(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None, inputs: ReportInputs
) -> tuple[StarvationEstimate, ...]:
    """Per (partition, GPU type): GPU time the month's jobs below the recommendation lost to
    CPU starvation, and what the missing cores would have cost.

    The formula is :func:`advisor.recommend.recommend_partitions`' (which the tests check):
    a job's lost GPU-hours are its GPU-hours x (1 - slowdown(recommended) / slowdown(its own
    cores per GPU)) from the fitted model at its own GPU count; the fix is (recommended x GPUs
    - CPUs) x elapsed hours of the jobs below, at the per-vCPU price; the loss is priced at
    the reference instance's $ per GPU-hour.
    """
    import numpy as np

    from advisor import slowdown

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
        cores = np.array([m[2] / m[3] for m in members], dtype=float)
        X_job = np.array([slowdown.feature_row(c, gpus=float(m[3]), platform=platform)
                          for c, m in zip(cores, members, strict=True)])  # fmt: skip
        X_rec = X_job.copy()
        X_rec[:, 0] = dflt
        s_job, _ = slowdown.evaluate(params, X_job)
        s_rec, _ = slowdown.evaluate(params, X_rec)
        below = cores < dflt
        if not below.any():
            continue
        gpu_h = np.array([float(m[6]) for m in members])
        elapsed_h = np.array([float(m[5]) for m in members]) / 3600.0
        lost_frac = np.where(below, np.clip(1.0 - s_rec / s_job, 0.0, 1.0), 0.0)
        deficit = np.array([dflt * m[3] - m[2] for m in members], dtype=float)
        extra = float(np.sum(np.where(below, deficit * elapsed_h, 0.0)))
        lost = float(np.sum(gpu_h * lost_frac))
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
            )
        )
    out.sort(key=lambda e: (-e.gpu_hours_lost, str(e.partition), e.gpu_type))
    return tuple(out)


def read_policy(path: str | os.PathLike[str]) -> Policy:
    """An exported policy, in either of its forms (docs/policy-format.md): the JSON export
    (``advisor policy export --format json``) or the Lua chunk the Slurm plugins load
    (``--format lua``, e.g. ``/etc/slurm/advisor-policy.lua``). Bad content names the file,
    line and field."""
    from advisor.policy import POLICY_VERSION, Mode, PolicyRule
    from advisor.policy import Policy as PolicyT

    p = Path(path)
    src = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise NotFoundError(f"{p}: no such policy file; export one with "
                            "`advisor policy export`") from exc  # fmt: skip
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", source=src) from exc
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", source=src, line=exc.lineno) from exc
        key = '"{}"'  # how a field's name appears in the text, to find its line
    else:
        data = _lua_policy(text, src)
        key = "{} ="
    if not isinstance(data, dict):
        raise InputError("must be a table/object with version and rules", source=src, line=1)
    version = data.get("version")
    if isinstance(version, float) and version.is_integer():
        version = int(version)
    if not isinstance(version, int) or version != POLICY_VERSION:
        raise InputError(f"version {version!r} is not {POLICY_VERSION}", source=src,
                         line=_line_of(text, key.format("version")), field="version")  # fmt: skip
    raw_rules = data.get("rules")
    if raw_rules == {}:
        raw_rules = []  # an empty Lua table
    if not isinstance(raw_rules, list):
        raise InputError("must be a list of rules", source=src,
                         line=_line_of(text, key.format("rules")), field="rules")  # fmt: skip
    rules = []
    seen: set[tuple[str, str]] = set()
    for i, r in enumerate(raw_rules):
        where = f"rules[{i}]"
        line = _line_of(text, key.format("partition"), i)
        if not isinstance(r, dict):
            raise InputError("must be an object", source=src, line=line, field=where)
        for name in ("partition", "gpu_type", "mode"):
            if not isinstance(r.get(name), str) or not r.get(name):
                raise InputError("must be a non-empty string", source=src, line=line,
                                 field=f"{where}.{name}")  # fmt: skip
        for name in ("min_cpus_per_gpu", "default_cpus_per_gpu"):
            v = r.get(name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                raise InputError(f"{v!r} is not a number of cores per GPU (0 or more)",
                                 source=src, line=line, field=f"{where}.{name}")  # fmt: skip
        try:
            mode = Mode(r["mode"])
        except ValueError:
            raise InputError(f"{r['mode']!r} is not one of {', '.join(m.value for m in Mode)}",
                             source=src, line=line, field=f"{where}.mode") from None  # fmt: skip
        rule_key = (r["partition"], r["gpu_type"].lower())
        if rule_key in seen:
            raise InputError(
                f"a second rule for partition {rule_key[0]!r}, gpu_type {rule_key[1]!r}",
                source=src, line=line, field=where,
            )  # fmt: skip
        seen.add(rule_key)
        rules.append(PolicyRule(rule_key[0], rule_key[1], _whole(r["min_cpus_per_gpu"]),
                                _whole(r["default_cpus_per_gpu"]), mode))  # fmt: skip
    return PolicyT(version, str(data.get("generated_at") or ""), str(data.get("source") or ""),
                   tuple(rules))  # fmt: skip


def _whole(v: float) -> Any:
    return int(v) if isinstance(v, float) and v.is_integer() else v


_LUA_TOKEN = re.compile(
    r"""(?P<ws>\s+)
      | (?P<comment>--(?!\[\[)[^\n]*)
      | (?P<str>"(?:[^"\\\n]|\\.)*")
      | (?P<num>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<punct>[{}=,;])""",
    re.VERBOSE,
)
_LUA_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'"}


def _lua_string(token: str, src: str, line: int) -> str:
    """The value of a double-quoted Lua 5.1 string literal (escapes, decimal ``\\ddd`` bytes)."""
    out = bytearray()
    body = token[1:-1]
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1]
        if nxt.isdigit():
            digits = re.match(r"\d{1,3}", body[i + 1 :])
            assert digits is not None
            value = int(digits.group())
            if value > 255:
                raise InputError(f"escape \\{digits.group()} is not a byte", source=src, line=line)
            out.append(value)
            i += 1 + len(digits.group())
        elif nxt in _LUA_ESCAPES:
            out += _LUA_ESCAPES[nxt].encode("utf-8")
            i += 2
        else:
            raise InputError(f"unknown escape \\{nxt} in a string", source=src, line=line)
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("a string is not UTF-8", source=src, line=line) from exc


def _lua_policy(text: str, src: str) -> Any:
    """The value a ``return { ... }`` Lua chunk returns, for the subset policy export writes:
    tables (``name = value`` fields or a list), double-quoted strings, numbers, booleans."""
    tokens: list[tuple[str, str, int]] = []
    pos, line = 0, 1
    while pos < len(text):
        m = _LUA_TOKEN.match(text, pos)
        if m is None:
            raise InputError(f"cannot read {text[pos:pos + 20]!r}: not the Lua table that "
                             "`advisor policy export --format lua` writes", source=src,
                             line=line)  # fmt: skip
        kind = m.lastgroup or ""
        if kind not in ("ws", "comment"):
            tokens.append((kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    at = 0

    def peek() -> tuple[str, str, int]:
        # past the end: report the line of the last thing read, not the empty line after it
        return tokens[at] if at < len(tokens) else ("eof", "", tokens[-1][2] if tokens else 1)

    def take(expected: str | None = None) -> tuple[str, str, int]:
        nonlocal at
        tok = peek()
        if expected is not None and tok[1] != expected:
            found = tok[1] or "the end of the file"
            raise InputError(f"expected {expected!r}, found {found!r}", source=src, line=tok[2])
        at += 1
        return tok

    def value() -> Any:
        kind, tok, ln = peek()
        if tok == "{":
            return table()
        take()
        if kind == "str":
            return _lua_string(tok, src, ln)
        if kind == "num":
            number = float(tok)
            return int(number) if re.fullmatch(r"-?\d+", tok) else number
        if tok in ("true", "false"):
            return tok == "true"
        raise InputError(f"unexpected {tok or 'end of file'!r}", source=src, line=ln)

    def table() -> Any:
        take("{")
        named: dict[str, Any] = {}
        listed: list[Any] = []
        while peek()[1] != "}":
            kind, tok, _ = peek()
            if kind == "eof":
                take("}")  # says what is missing, and where the file ended
            if kind == "name" and at + 1 < len(tokens) and tokens[at + 1][1] == "=":
                take()
                take("=")
                named[tok] = value()
            else:
                listed.append(value())
            if peek()[1] in (",", ";"):
                take()
            elif peek()[1] != "}":
                take("}")
        take("}")
        if named and listed:
            raise InputError("a table mixes named fields and a list", source=src, line=peek()[2])
        return named if named or not listed else listed

    take("return")
    result = table()
    if at != len(tokens):
        raise InputError(f"unexpected {tokens[at][1]!r} after the table", source=src,
                         line=tokens[at][2])  # fmt: skip
    return result


def _line_of(text: str, needle: str, nth: int = 0) -> int | None:
    """The 1-based line of the ``nth`` occurrence of ``needle`` in ``text`` (None if absent)."""
    pos = -1
    for _ in range(nth + 1):
        pos = text.find(needle, pos + 1)
        if pos < 0:
            return None
    return text.count("\n", 0, pos) + 1


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
                partition=r.partition, gpu_type=r.gpu_type, mode=str(r.mode.value),
                min_cpus_per_gpu=float(r.min_cpus_per_gpu), jobs=jobs, jobs_compliant=ok,
                share_compliant=ok / jobs,
            )
        )  # fmt: skip
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
        notes.append("No partition recommendations (no GPU jobs in the database, or none "
                     "given): the sections that compare against them are empty.")  # fmt: skip
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
        notes.append(f"Small sample: only {quality.gpu_jobs:,} GPU allocation"
                     f"{'s' if quality.gpu_jobs != 1 else ''} started in "
                     f"{month.label}; percentiles and shares of so few jobs move a lot from "
                     "month to month.")
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
        summary=_summary(starvation, prev_starvation, accounts, gpu_types, inputs, cluster,
                         generated)
        if inputs.recommendations else None,
        prev_distribution=prev_distribution,
        no_records=no_records,
        small_sample=small,
        usage=usage,
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
        out.append(f"Cost of the fix: the extra cores those jobs would have held, at "
                   f"${v.usd_per_vcpu_hour:.3f} per vCPU-hour ({v.basis}, prices of "
                   f"{v.as_of.isoformat()}).")
        out.append("Value of the GPU time lost: at the cloud price of the same GPU "
                   "(the reference instance's price per GPU-hour).")
    return tuple(out)


def _summary(
    starvation: Sequence[StarvationEstimate],
    prev_starvation: Sequence[StarvationEstimate],
    accounts: Sequence[BelowRecommendation],
    gpu_types: Sequence[GpuTypeMonth],
    inputs: ReportInputs,
    cluster: str | None,
    generated_at: dt.datetime,
) -> Summary:
    from advisor.fixplan import settings_for

    lost = sum(e.gpu_hours_lost for e in starvation)
    prev_lost = sum(e.gpu_hours_lost for e in prev_starvation) if prev_starvation else None
    shown = {(e.partition, e.gpu_type) for e in starvation}
    recs = [r for r in inputs.recommendations if (r.partition, r.gpu_type) in shown]
    settings = (settings_for(cluster or "all clusters", recs, generated_at).slurm_conf
                if recs else "")  # fmt: skip
    changes = []
    if prev_lost is not None:
        changes.append(f"GPU-hours lost: {_hours(lost)} against {_hours(prev_lost)} the month "
                       f"before ({_signed_pct(lost, prev_lost)}).")
    else:
        changes.append("No estimate for the month before to compare with.")
    for g in gpu_types:
        if g.p50_cores_per_gpu is None or g.prev_p50_cores_per_gpu is None:
            continue
        if g.p50_change_cores_per_gpu:
            changes.append(f"{g.gpu_type}: median cores per GPU {g.prev_p50_cores_per_gpu:g} "
                           f"→ {g.p50_cores_per_gpu:g}.")
        else:
            changes.append(f"{g.gpu_type}: median unchanged at {g.p50_cores_per_gpu:g} cores "
                           "per GPU.")
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


# --------------------------------------------------------------------------------------------
# Charts


@dataclass(frozen=True)
class ReportChart:
    """One chart of the report: an id (its file name for PNG/PDF), a title, a Vega-Lite spec."""

    chart_id: str
    title: str
    spec: dict[str, Any]


def report_charts(report: MonthlyReport) -> tuple[ReportChart, ...]:
    """The report's charts, each drawn from the report object alone (no query of its own)."""
    import altair as alt
    import pandas as pd

    charts: list[ReportChart] = []
    if report.gpu_types:
        rows = []
        for g in report.gpu_types:
            for month, p25, p50 in (
                (report.previous_month, g.prev_p25_cores_per_gpu, g.prev_p50_cores_per_gpu),
                (report.month, g.p25_cores_per_gpu, g.p50_cores_per_gpu),
            ):
                for quantile, value in (("P25", p25), ("P50", p50)):
                    if value is not None and value > 0:
                        rows.append(
                            {"gpu_type": g.gpu_type, "month": month, "quantile": quantile,
                             "cores_per_gpu": value}
                        )  # fmt: skip
        if rows:
            order = [report.previous_month, report.month]
            chart = (
                alt.Chart(pd.DataFrame(rows))
                .mark_point(filled=True, size=90)
                .encode(
                    x=alt.X("gpu_type:N", title="GPU type"),
                    xOffset=alt.XOffset("month:N", sort=order),
                    y=alt.Y("cores_per_gpu:Q", scale=alt.Scale(type="log", base=2),
                            axis=alt.Axis(values=[2.0**k for k in range(-4, 9)], format="~g"),
                            title="CPU cores per GPU (log scale)"),
                    color=alt.Color("month:N", sort=order, title="month"),
                    shape=alt.Shape("quantile:N", sort=["P25", "P50"], title="percentile"),
                    tooltip=["gpu_type:N", "month:N", "quantile:N",
                             alt.Tooltip("cores_per_gpu:Q", format=".2f")],
                )
                .properties(width=max(160, 110 * len(report.gpu_types)), height=260)
            )  # fmt: skip
            charts.append(
                ReportChart(
                    "cores-per-gpu", "Cores per GPU: this month against last", chart.to_dict()
                )
            )
    if report.distribution:
        from advisor.charts import ratio_histogram

        dist = pd.DataFrame([vars(p) for p in report.distribution])
        quantiles = pd.DataFrame(
            [{"gpu_type": g.gpu_type, "p25_cores_per_gpu": g.p25_cores_per_gpu,
              "p50_cores_per_gpu": g.p50_cores_per_gpu} for g in report.gpu_types if g.jobs]
        )  # fmt: skip
        previous = (pd.DataFrame([vars(p) for p in report.prev_distribution])
                    if report.prev_distribution else None)  # fmt: skip
        chart = ratio_histogram(dist, quantiles=quantiles, previous=previous,
                                previous_label=report.previous_month, height=120)  # fmt: skip
        charts.append(
            ReportChart("ratio-histogram",
                        f"Cores per GPU in {report.month} (outlined: {report.previous_month})",
                        chart.to_dict())  # fmt: skip
        )
    from advisor.charts import top_bar_chart

    # Accounts and partitions apart: an account's GPU-hours are also its partition's, so one
    # ranking of both would count them twice.
    for scope, below in (("accounts", report.below_accounts),
                         ("partitions", report.below_partitions)):  # fmt: skip
        if not below:
            continue
        df = pd.DataFrame([{"who": _who(b), "gpu_hours_below": b.gpu_hours_below,
                            "flag": b.flag} for b in below])  # fmt: skip
        chart = top_bar_chart(
            df, name="who", value="gpu_hours_below", title="GPU-hours below the recommendation",
            tooltip=["flag:N"], limit=max(1, len(below)),
        )  # fmt: skip
        charts.append(ReportChart(f"below-{scope}", f"{scope.capitalize()} most below the "
                                  "recommendation", chart.to_dict()))  # fmt: skip
    if report.quality.daily:
        df = pd.DataFrame([{"day": d.day.isoformat(), "gpu_jobs": d.gpu_jobs, "jobs": d.jobs}
                           for d in report.quality.daily])  # fmt: skip
        chart = (
            alt.Chart(df)
            .mark_bar()
            .encode(
                x=alt.X("day:T", title="day (UTC)", timeUnit="utcyearmonthdate"),
                y=alt.Y("jobs:Q", title="allocations started"),
                color=alt.condition("datum.jobs == 0", alt.value("#d62728"), alt.value("#4c78a8")),
                tooltip=[
                    alt.Tooltip("day:T", timeUnit="utcyearmonthdate", format="%Y-%m-%d"),
                    "jobs:Q",
                    "gpu_jobs:Q",
                ],
            )
            .properties(width=620, height=160)
        )
        charts.append(ReportChart("daily-starts", "Allocations started per day", chart.to_dict()))
    return tuple(charts)


_BUNDLE_SNIPPET = "window.vegaEmbed = vegaEmbed; window.vega = vega; window.vegaLite = vegaLite;"


def _who(b: BelowRecommendation) -> str:
    where = f" in {b.partition}" if b.scope == "account" else ""
    return f"{b.name}{where} ({b.gpu_type})"


@cache
def _vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script, from vl-convert (no network, no CDN)."""
    import vl_convert

    return str(vl_convert.javascript_bundle(_BUNDLE_SNIPPET))


# --------------------------------------------------------------------------------------------
# Rendering


def _num(value: object) -> str:
    """A number as the report shows it."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if 0 < abs(value) < 0.1:
            return f"{value:.3g}"  # 0.0504 $/vCPU-hour: small figures keep their digits
        return f"{value:,.2f}"
    return str(value)


def _raw(value: object) -> str:
    """A number exactly, for the ``data-value`` attribute (repr round-trips floats)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _fmt(value: object, kind: str = "num") -> str:
    """One format per kind of number, the same wherever it appears in the report: counts and
    hours whole with separators, cores per GPU with two decimals, dollars whole, unit prices
    with the cents that matter."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if not isinstance(value, (int, float)) or isinstance(value, bool) or kind == "num":
        return _num(value)
    v = float(value)
    if kind in ("int", "hours"):
        return f"{v:,.0f}"
    if kind == "cores":
        return f"{v:,.2f}"
    if kind == "usd":
        return f"${v:,.0f}"
    if kind == "price":
        return f"${v:,.2f}"
    raise ValueError(f"unknown number kind {kind!r}")


def _share(value: float | None) -> str:
    return "–" if value is None else f"{100.0 * value:.1f}%"


@cache
def _template(name: str = "report.html.j2") -> Any:
    import jinja2

    text = resources.files("advisor").joinpath("report_templates", name).read_text(encoding="utf-8")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["num"] = _num
    env.filters["raw"] = _raw
    env.filters["share"] = _share
    env.filters["fmt"] = _fmt
    return env.from_string(text)


# Inside <script>, "<!--<script>" in a name would make the HTML parser swallow the elements
# after it and "</script" would end it; "&", U+2028 and U+2029 trip other parsers. JSON can
# spell each of them as a \u escape inside a string (they never occur outside one).
_INLINE_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def inline_json(value: Any) -> str:
    """``value`` as JSON that is safe to place inside an HTML ``<script>`` element as is."""
    return json.dumps(value, separators=(",", ":"), default=str).translate(_INLINE_JSON_ESCAPES)


def render_html(report: MonthlyReport, charts: Sequence[ReportChart] | None = None) -> str:
    """The report as one self-contained HTML page (charts drawn in the browser, offline)."""
    charts = report_charts(report) if charts is None else charts
    specs = {c.chart_id: c.spec for c in charts}
    specs_json = inline_json(specs)
    bundle = _vega_bundle().replace("</script", "<\\/script") if charts else ""
    return str(
        _template().render(
            r=report, charts=charts, specs_json=specs_json, vega_bundle=bundle,
            title=_title(report), usage_html=_usage_html(report),
        )
    )  # fmt: skip


def _usage_html(report: MonthlyReport) -> Any:
    """The usage section (its own template: usage_section.html.j2), or nothing."""
    import markupsafe

    if report.usage is None:
        return ""
    return markupsafe.Markup(_template("usage_section.html.j2").render(u=report.usage))


def _title(report: MonthlyReport) -> str:
    where = f"cluster {report.cluster}" if report.cluster else "all clusters"
    return f"CPU cores per GPU, {report.month}, {where}"


# --------------------------------------------------------------------------------------------
# Writing


def report_dir_name(month: str, cluster: str | None) -> str:
    """``2024-10`` for every cluster, ``2024-10--<cluster>`` for one (unsafe characters -> _)."""
    if cluster is None:
        return month
    return f"{month}--{_SAFE_RE.sub('_', cluster)}"


def _replace_dir(built: Path, target: Path) -> None:
    """Swap ``built`` in at ``target``; an older ``target`` is removed only after the swap."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        if old.exists():
            shutil.rmtree(old)
        target.rename(old)
    built.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_report(
    report: MonthlyReport,
    out_dir: Path,
    *,
    png: bool = False,
    pdf: bool = False,
    progress: ProgressFn = no_progress,
) -> ReportResult:
    """Write one report's folder (HTML, and PNG/PDF charts if asked), replacing an older one."""
    import vl_convert

    charts = report_charts(report)
    html = render_html(report, charts)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / report_dir_name(report.month, report.cluster)
    built = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=out_dir))
    try:
        (built / "report.html").write_text(html, encoding="utf-8")
        (built / "report.json").write_text(
            json.dumps(report_as_dict(report), indent=2, default=str), encoding="utf-8"
        )
        images: list[str] = []
        kinds = [k for k, on in (("png", png), ("pdf", pdf)) if on]
        total = len(charts) * len(kinds)
        for i, (chart, kind) in enumerate((c, k) for c in charts for k in kinds):
            name = f"{chart.chart_id}.{kind}"
            if kind == "png":
                (built / name).write_bytes(vl_convert.vegalite_to_png(chart.spec, scale=2))
            else:
                (built / name).write_bytes(vl_convert.vegalite_to_pdf(chart.spec))
            images.append(name)
            progress(f"charts {report.month}", i + 1, total)
        if png or pdf:
            # the whole report for e-mail, printed from the written page as a browser draws it
            print_report(built / "report.html", pdf=built / "report.pdf" if pdf else None,
                         png=built / "report.png" if png else None)  # fmt: skip
            images += [n for n, on in (("report.png", png), ("report.pdf", pdf)) if on]
        built.chmod(0o755)
        _replace_dir(built, target)
    except BaseException:
        shutil.rmtree(built, ignore_errors=True)
        raise
    return ReportResult(
        month=report.month,
        cluster=report.cluster,
        html_path=target / "report.html",
        image_paths=tuple(target / n for n in images),
        gpu_jobs=report.quality.gpu_jobs,
        html_sha256=hashlib.sha256(html.encode("utf-8")).hexdigest(),
    )


CHROMIUM_ENV = "ADVISOR_CHROMIUM"
_CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
REPORT_WIDTH_PX = 1200  # the e-mail copy's width: the page's max-width plus its margins
_MAX_HEIGHT_PX = 16000


def _chromium() -> str:
    """Headless Chromium for the e-mail copies: ``$ADVISOR_CHROMIUM``, else one on PATH."""
    exe = os.environ.get(CHROMIUM_ENV) or next(
        (found for n in _CHROMIUM_NAMES if (found := shutil.which(n))), None
    )
    if not exe:
        raise ExternalToolError(
            "report.pdf and report.png are printed by headless Chromium, and none was found: "
            f"install it (Debian: apt-get install chromium) or set {CHROMIUM_ENV}=/path/to/it"
        )
    return exe


def print_report(html_path: Path, *, pdf: Path | None = None, png: Path | None = None) -> None:
    """Print the written report with headless Chromium: ``pdf`` as a paged PDF, ``png`` as one
    image of the whole page, both after its charts are drawn, for readers of e-mail."""
    import subprocess

    exe = _chromium()
    url = html_path.resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="advisor-chromium-") as profile:
        base = [
            exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", f"--user-data-dir={profile}",
            # the charts are drawn by the page's script: let it run before printing
            "--virtual-time-budget=20000", "--run-all-compositor-stages-before-draw",
        ]  # fmt: skip
        jobs = []
        if pdf is not None:
            jobs.append([*base, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", url])
        if png is not None:
            jobs.append([*base, f"--window-size={REPORT_WIDTH_PX},{_MAX_HEIGHT_PX}",
                         f"--screenshot={png}", url])  # fmt: skip
        for cmd in jobs:
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ExternalToolError(f"{exe}: could not print {html_path}: {exc}") from exc
            out = Path(cmd[-2].split("=", 1)[1])
            if done.returncode != 0 or not out.exists():
                tail = (done.stderr or "").strip().splitlines()[-3:]
                raise ExternalToolError(
                    f"{exe} exited with {done.returncode} printing {html_path}: {' '.join(tail)}"
                )
    if png is not None:
        _trim_bottom(png)


def _trim_bottom(png: Path, margin_px: int = 40) -> None:
    """Cut the blank window below the page's end (the screenshot window is tall on purpose)."""
    from PIL import Image, ImageChops

    with Image.open(png) as img:
        rgb = img.convert("RGB")
    background = Image.new("RGB", rgb.size, rgb.getpixel((rgb.width - 1, rgb.height - 1)))
    box = ImageChops.difference(rgb, background).getbbox()
    if box is None:
        return
    bottom = min(rgb.height, box[3] + margin_px)
    rgb.crop((0, 0, rgb.width, bottom)).save(png, optimize=True)


def report_as_dict(report: MonthlyReport) -> dict[str, Any]:
    """The report object as plain JSON-ready data (written next to the HTML as report.json)."""
    from dataclasses import asdict

    def plain(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, (dt.date, dt.datetime)):
            return v.isoformat()
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v

    return dict(plain(asdict(report)))


def _write_index(out_dir: Path, results: Iterable[ReportResult]) -> None:
    """Merge these results into ``OUT/index.json`` (one entry per month and cluster)."""
    index_path = out_dir / "index.json"
    entries: dict[str, dict[str, Any]] = {}
    if index_path.exists():
        try:
            for e in json.loads(index_path.read_text(encoding="utf-8")).get("reports", []):
                entries[report_dir_name(e["month"], e.get("cluster"))] = e
        except (json.JSONDecodeError, KeyError, AttributeError, TypeError):
            entries = {}  # a damaged index is rebuilt from what is written now
    for r in results:
        entries[report_dir_name(r.month, r.cluster)] = {
            "month": r.month,
            "cluster": r.cluster,
            "html": str(r.html_path.relative_to(out_dir)),
            "images": [str(p.relative_to(out_dir)) for p in r.image_paths],
            "gpu_jobs": r.gpu_jobs,
            "html_sha256": r.html_sha256,
        }
    data = {"reports": [entries[k] for k in sorted(entries)]}
    tmp = index_path.with_name(".index.json.tmp")
    tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    tmp.replace(index_path)
    # and a page for people: newest month first
    newest = sorted(data["reports"], key=lambda e: (e["month"], e["cluster"] or ""), reverse=True)
    page = _template("index.html.j2").render(entries=newest)
    tmp = out_dir / ".index.html.tmp"
    tmp.write_text(str(page), encoding="utf-8")
    tmp.replace(out_dir / "index.html")


def run_reports(
    config: ReportConfig,
    db: str | os.PathLike[str] | None = None,
    *,
    progress: ProgressFn = no_progress,
    now: dt.datetime | None = None,
) -> list[ReportResult]:
    """Build and write the month's report (or every month's, with ``all_months``).

    Opens the database read-only, so a report can run while the dashboard has it open.
    """
    if config.all_months == (config.month is not None):
        raise UsageError("give either --month YYYY-MM or --all-months (exactly one)")
    if config.top_n < 1:
        raise UsageError(f"--top {config.top_n}: must be at least 1")
    if config.out_dir.exists() and not config.out_dir.is_dir():
        raise UsageError(f"--out {config.out_dir}: exists and is not a folder")
    store.connect(db, read_only=True).close()  # a clear error first when there is no database
    inputs = load_inputs(config, db)
    con = store.connect(db, read_only=True)
    try:
        if config.all_months:
            months = available_months(con, config.cluster)
            if not months:
                where = f" of cluster {config.cluster!r}" if config.cluster else ""
                raise NotFoundError(
                    f"no GPU allocations{where} in the database; load some first with "
                    "`advisor ingest FILE`"
                )
        else:
            months = [resolve_month(config.month or "", now)]
            if config.cluster is not None:
                _check_cluster(con, config.cluster)
        results = []
        for i, month in enumerate(months):
            report = build_report(con, month, config.cluster, inputs, top_n=config.top_n,
                                  now=now, progress=progress)  # fmt: skip
            results.append(
                write_report(
                    report, config.out_dir, png=config.png, pdf=config.pdf, progress=progress
                )  # fmt: skip
            )
            progress("months", i + 1, len(months))
        _write_index(config.out_dir, results)
        return results
    finally:
        con.close()


def _check_cluster(con: duckdb.DuckDBPyConnection, cluster: str) -> None:
    known = {name: int(jobs) for name, jobs in _rows(con, "clusters", [])}
    if not known.get(cluster):
        raise NotFoundError(
            f"--cluster {cluster!r}: no such cluster in the database; have {sorted(known)}"
        )
