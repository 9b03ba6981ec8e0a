"""Recommendations for partitions: ``DefCpuPerGPU`` per (partition, GPU family) of the observed jobs.

From the jobs in the database, per (partition, GPU family): the recommended ``DefCpuPerGPU``
(:func:`~advisor.recommend.decision.sufficient_cores` at the group's typical GPU count) and
``min_cpus_per_gpu`` (:func:`~advisor.recommend.decision.minimum_cores`), the jobs and
GPU-hours below it, the GPU time estimated lost to CPU starvation with its interval
(:func:`~advisor.recommend.starvation.starvation`), and what fixing it costs per month.
Distribution figures (jobs, GPU-hours, P25/P50, shares below) are computed from one pass over
the jobs (``sql/recommend/job_mix.sql``) with the definitions of :mod:`advisor.ratios` (the
same eligible jobs, job-weighted percentiles with linear interpolation); a test checks they
equal :func:`advisor.ratios.ratio_summary`'s. Calling that too would read every job a second
time.

Assumptions (also returned): a job's GPU time lost is its GPU-hours x (1 - slowdown(recommended)
/ slowdown(its cores)), as if every GPU job were an LLM server, which overstates it for training
and batch jobs; costs are extra vCPU-hours x the per-vCPU price (:mod:`advisor.pricing`).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from advisor.dbpath import resolve_db_path
from advisor.headline import basis_sentence, calibration_of
from advisor.model import slowdown
from advisor.model.waitknee import check_max_wait
from advisor.progress import ProgressFn, no_progress
from advisor.quantiles import job_percentiles_by_group
from advisor.recommend.context import (
    DEFAULT_MAX_CPUS_PER_GPU,
    RecommendContext,
    check_partition,
)
from advisor.recommend.decision import (
    Sufficient,
    capacity_settings,
    minimum_cores,
    sufficient_cores,
)
from advisor.recommend.measured import (
    LossSplit,
    MeasuredAnswer,
    agreement,
    decide_default,
    loss_split,
    measured_answer,
)
from advisor.recommend.query import Workload, canonical_platform, check_tolerance
from advisor.recommend.starvation import Starvation, starvation

if TYPE_CHECKING:
    from advisor.pressure.curve import PressureCurve

DAYS_PER_MONTH = 30.4375


@dataclass(frozen=True)
class PartitionQuery:
    """Which partitions / GPU families to recommend for, under which workload and targets."""

    db: str | None = None
    partition: str | None = None  # None: every partition
    gpu_type: str | None = None  # canonical family; None: every one
    clusters: tuple[str, ...] = ()  # empty: every cluster
    start: dt.datetime | None = None  # jobs started at or after (UTC); None: no bound
    end: dt.datetime | None = None  # jobs started before (UTC); None: no bound
    workload: Workload = Workload()
    tolerance: float = 0.10  # the default cores per GPU: within this of ample cores
    min_tolerance: float = 0.50  # the minimum cores per GPU: within this of ample cores
    pricing_file: str | None = None
    model_file: str | None = None
    max_wait: float = 0.15  # the wait model's threshold (advisor.model.waitknee.DEFAULT_MAX_WAIT)


@dataclass(frozen=True)
class PartitionRecommendation:
    """The recommended DefCpuPerGPU of one (partition, GPU family) and what it changes."""

    partition: str | None
    gpu_type: str
    gres_type: str | None  # the GRES type users ask for (lower case), for the Lua policy
    jobs: int
    gpu_hours: float
    p25_cores_per_gpu: float
    p50_cores_per_gpu: float
    typical_gpus: int  # GPU-hour weighted median GPUs per job, used for the prediction
    node_max_cpus_per_gpu: int | None
    def_cpu_per_gpu: int
    min_cpus_per_gpu: int
    jobs_below: int
    share_jobs_below: float
    gpu_hours_below: float
    share_gpu_hours_below: float
    gpu_hours_lost: float
    gpu_hours_lost_interval: tuple[float, float]  # 5-95% over the fit's refits
    months_observed: float  # the group's span (first start to last end) in DAYS_PER_MONTH months
    gpu_hours_lost_per_month: float  # the span's total when it is shorter than a month
    lost_usd_per_month: float | None
    fix_vcpu_hours_per_month: float
    fix_usd_per_month: float
    warnings: tuple[str, ...] = ()
    gpu_hours_lost_per_month_interval: tuple[float, float] = (0.0, 0.0)
    decision_basis: str = "2 + N"  # what set def_cpu_per_gpu (see recommend_job)
    cost_reason: str | None = None  # why lost_usd_per_month is None (no instance price)
    span_hours: float = 0.0  # first start to last end of the group's jobs
    fix_vcpu_hours: float = 0.0  # the span's total, not per month
    usd_per_gpu_hour: float | None = None  # the reference instance's; None: not priced
    lost_usd_per_month_interval: tuple[float, float] | None = None  # None: not priced
    share_gpu_hours_lost: float = 0.0  # 0-1 of gpu_hours (an upper bound, as the loss)
    calibrated: bool = True  # the curve was fitted on this GPU type's own measurements
    extrapolated_from: tuple[str, ...] = ()  # else: the calibrated platforms it comes from
    cluster: str | None = None  # set by recommend_by_cluster; None: the query's clusters pooled
    # what decided def_cpu_per_gpu: the group's measured curve ("measured") or the model
    basis: str = "model"
    model_def_cpu_per_gpu: int | None = None  # the model's answer, shown beside a measured one
    measured_def_cpu_per_gpu: int | None = None
    measured_jobs: int = 0  # measured jobs at the typical GPU count
    measured_reason: str | None = None  # why the measurement answers what it does, or cannot
    model_vs_measured: str | None = None  # agree, model asks more / fewer; None: nothing to compare
    # the loss split: measured jobs from their own stall, the rest from the model
    gpu_hours_measured: float = 0.0  # GPU-hours of the group's jobs with measured pressure
    gpu_hours_lost_measured: tuple[float, float] = (0.0, 0.0)  # full..some of those below, span
    gpu_hours_lost_model: float = 0.0  # the model's loss of the unmeasured jobs, span
    loss_disagreement: str | None = None  # model and measurement apart beyond their intervals
    # the model's predicted wait per core count and role at the typical GPU count (recommend's
    # wait_curve): the evidence behind model_def_cpu_per_gpu
    wait_curve: tuple[dict[str, Any], ...] = ()

    @property
    def share_gpu_hours_measured(self) -> float:
        return self.gpu_hours_measured / self.gpu_hours if self.gpu_hours else 0.0

    @property
    def per_month(self) -> bool:
        """Whether the ``*_per_month`` figures are rates (else the span's totals)."""
        return self.months_observed >= 1.0


@dataclass(frozen=True)
class PartitionReport:
    rows: tuple[PartitionRecommendation, ...]
    assumptions: dict[str, Any]


def _weighted_median(values: Sequence[float], weights: Sequence[float]) -> float:
    order = np.argsort(values)
    v = np.asarray(values, dtype=float)[order]
    w = np.asarray(weights, dtype=float)[order]
    cum = np.cumsum(w)
    return float(v[int(np.searchsorted(cum, 0.5 * cum[-1]))])


def _job_mix(con: Any, q: PartitionQuery) -> list[tuple[Any, ...]]:
    """The observed jobs grouped by partition, GPU family, GRES, CPUs and GPUs (with jobs,
    elapsed seconds, GPU-hours, first start and last end) under the query's filters."""
    from advisor.derived.cube import job_mix

    return job_mix(con, _mix_params(q))


def _mix_params(q: PartitionQuery) -> dict[str, Any]:
    """The parameters of recommend/job_mix and recommend/measured_mix: the query's filters."""
    from advisor.filters import utc_naive

    return {
        "partition": q.partition,
        "gpu_type": q.gpu_type,
        "clusters": list(q.clusters),
        "start": utc_naive(q.start),
        "end": utc_naive(q.end),
    }


def measured_curves(con: Any, q: PartitionQuery, params: Any) -> PressureCurve:
    """The query's measured pressure curve per (partition, GPU family, GPUs per job), against
    the stall that ``q.max_wait`` means through the measured link."""
    from advisor.filters import utc_naive
    from advisor.model.psilink import STARVED_PSI_DEFAULT, links_from_json, starved_psi_for
    from advisor.pressure.curve import CurveQuery, curve_of

    implied = starved_psi_for(q.max_wait, links_from_json(params.meta.get("psi_link")))
    return curve_of(
        con,
        CurveQuery(
            by=("partition", "gpu_type", "gpu_count"),
            threshold=implied[0] if implied else STARVED_PSI_DEFAULT,
            clusters=q.clusters,
            partitions=(q.partition,) if q.partition else (),
            gpu_types=(q.gpu_type,) if q.gpu_type else (),
            start=utc_naive(q.start),
            end=utc_naive(q.end),
            full_interval=False,
        ),
    )


# per job-mix row key (partition, GPU family, CPUs, GPUs): its measured GPU-hours and held ends
MeasuredMix = dict[tuple[Any, ...], tuple[float, float, float]]


def measured_mix(con: Any, q: PartitionQuery) -> MeasuredMix:
    """recommend/measured_mix per job-mix row key (partition, GPU family, CPUs, GPUs) under
    ``q``'s filters: GPU-hours measured, and held (some, full)."""
    from advisor.store import render

    rows = con.execute(render("recommend/measured_mix", keys=""), _mix_params(q)).fetchall()
    return {(r[0], r[1], r[2], r[3]): (float(r[4]), float(r[5]), float(r[6])) for r in rows}


def _measured_fields(plan: _Plan) -> dict[str, Any]:
    """The row's measured evidence beside the model's answer (decided in :func:`_plan_groups`)."""
    model_dflt, answer = plan.model_default, plan.measured
    return {
        "basis": plan.answer_basis,
        "model_def_cpu_per_gpu": model_dflt,
        "measured_def_cpu_per_gpu": answer.cores_per_gpu if answer else None,
        "measured_jobs": answer.jobs if answer else 0,
        "measured_reason": answer.reason if answer else None,
        "model_vs_measured": agreement(model_dflt, answer) if answer else None,
    }


@dataclass(frozen=True)
class _Plan:
    """One group's answer before what it changes is counted."""

    gpus: int  # typical GPUs per job
    cap_row: tuple[int, int] | None  # the node inventory's (max cores per GPU, ...), if any
    platform: str | None
    default: int  # DefCpuPerGPU (measured or model)
    minimum: int
    reached: bool
    basis: str  # what decided the model's answer (wait model, capacity, 2 + N)
    model_default: int
    measured: MeasuredAnswer | None
    answer_basis: str  # what decided ``default``: "measured" or "model"
    wait_curve: tuple[dict[str, Any], ...] = ()  # the model's, at the typical GPU count


def _checked_connection(q: PartitionQuery, ctx: RecommendContext) -> Any:
    from advisor.errors import NotFoundError

    con = ctx.connection()
    if con is None:
        path = ctx.db_path
        raise NotFoundError(
            f"{path}: no such database; a partition recommendation needs the "
            f"observed jobs: load them first with `advisor ingest FILE --db {path}`"
        )
    if q.partition is not None:
        check_partition(ctx, q.partition)
    return con


def _plan_groups(
    q: PartitionQuery,
    ctx: RecommendContext,
    con: Any,
    buckets: dict[tuple[str | None, str], list[tuple[Any, ...]]],
    progress: ProgressFn,
    measured: bool,
) -> dict[tuple[str | None, str], _Plan]:
    """Each group's answer at its typical GPU count: the model's (remembered across calls of
    one context), then the measured curve's where it decides."""
    from advisor.store import query

    params = ctx.params
    caps = {
        (r[0], r[1]): (int(r[2]), int(r[3]))
        for r in con.execute(query("recommend/partition_caps")).fetchall()
    }
    # a database without pressure records has no measured job for any group
    curve = measured_curves(con, q, params) if measured else None

    def default(gpus: int, platform: str | None, cap: int) -> Sufficient:
        return ctx.remember(
            ("default", gpus, platform, q.workload, cap, q.max_wait),
            lambda: sufficient_cores(
                params,
                gpus=gpus,
                platform=platform,
                workload=q.workload,
                cap=cap,
                max_wait=q.max_wait,
            ),
        )

    def minimum(gpus: int, platform: str | None, cap: int) -> int:
        return ctx.remember(
            ("minimum", gpus, platform, q.workload, q.min_tolerance, cap),
            lambda: minimum_cores(
                params,
                gpus=gpus,
                platform=platform,
                workload=q.workload,
                tolerance=q.min_tolerance,
                cap=cap,
            ),  # fmt: skip
        )

    plans = {}
    for n, (key, rows) in enumerate(buckets.items()):
        partition, gpu_type = key
        gpus_typ = int(_weighted_median([r[4] for r in rows], [r[7] for r in rows]))
        cap_row = caps.get((partition, gpu_type))
        cap = max(cap_row[0] if cap_row else DEFAULT_MAX_CPUS_PER_GPU, 1)
        platform = None if gpu_type == "(untyped)" else canonical_platform(gpu_type)
        model = default(gpus_typ, platform, cap)
        model_dflt = model.cpus_per_gpu
        cells = curve.groups.get((partition, gpu_type, gpus_typ), ()) if curve else ()
        answer = measured_answer(cells, curve.threshold) if curve and cells else None
        dflt, answer_basis = decide_default(model_dflt, answer)
        mn = minimum(gpus_typ, platform, cap)
        plans[key] = _Plan(
            gpus_typ, cap_row, platform, dflt, min(mn, dflt), model.reached, model.basis,
            model_dflt, answer, answer_basis, model.wait_curve,
        )  # fmt: skip
        progress("partitions", n + 1, len(buckets))
    return plans


def _group_row(
    key: tuple[str | None, str],
    rows: list[tuple[Any, ...]],
    plan: _Plan,
    part: slice,
    evaluated: tuple[Starvation, LossSplit, np.ndarray],
    ctx: RecommendContext,
) -> PartitionRecommendation:
    """One group's recommendation and what it changes, from its rows' slice of the shared
    evaluation (the model's loss, its split against measurement, the P25 and P50)."""
    partition, gpu_type = key
    starved_all, split, pct = evaluated
    params, book = ctx.params, ctx.book
    dflt = plan.default
    warnings = slowdown.coverage_warnings(params, platform=plan.platform, gpus=plan.gpus)
    if not plan.reached:
        warnings.append(
            f"the node maximum ({dflt} cores per GPU) is below what the demand asks for"
        )
    if plan.cap_row is None:
        warnings.append(
            "no node inventory for this partition and GPU type; "
            f"capped at {DEFAULT_MAX_CPUS_PER_GPU} cores per GPU"
        )
    gpu_h = np.array([float(r[7]) for r in rows])
    below = starved_all.below[part]
    # measured jobs lose what their own stall held (full to some), the rest the model's
    t = split.totals(part)
    lost, (lost_lo, lost_hi) = t.lost, t.interval
    if t.disagreement:
        warnings.append(t.disagreement)
    fix_vcpu_h = float(np.sum(starved_all.fix_rows[part]))
    span_h = max((max(r[9] for r in rows) - min(r[8] for r in rows)).total_seconds() / 3600, 0.0)
    months_seen = span_h / 24.0 / DAYS_PER_MONTH
    # A rate scaled up from less than a month would claim more than the data holds.
    months = max(months_seen, 1.0)
    instance = book.find_instance(plan.platform or "")
    usd_gpu_h = None if instance is None else instance.usd_per_gpu_hour
    cost_reason = None if instance is not None else book.no_price_reason(gpu_type)
    if cost_reason is not None:
        warnings.append(f"lost GPU time not priced: {cost_reason}")
    jobs = sum(int(r[5]) for r in rows)
    gpu_hours = float(gpu_h.sum())
    jobs_below = sum(int(r[5]) for r, b in zip(rows, below, strict=True) if b)
    gh_below = float(gpu_h[below].sum())
    calibration = calibration_of(gpu_type, params.meta.get("platforms_seen") or ())
    return PartitionRecommendation(
        partition=partition,
        gpu_type=gpu_type,
        gres_type=next((r[2] for r in rows if r[2]), None),
        jobs=jobs,
        gpu_hours=gpu_hours,
        p25_cores_per_gpu=float(pct[0]),
        p50_cores_per_gpu=float(pct[1]),
        typical_gpus=plan.gpus,
        node_max_cpus_per_gpu=plan.cap_row[0] if plan.cap_row else None,
        def_cpu_per_gpu=dflt,
        min_cpus_per_gpu=plan.minimum,
        jobs_below=jobs_below,
        share_jobs_below=jobs_below / jobs,
        gpu_hours_below=gh_below,
        share_gpu_hours_below=gh_below / gpu_hours if gpu_hours else 0.0,
        gpu_hours_lost=lost,
        gpu_hours_lost_interval=(lost_lo, lost_hi),
        months_observed=months_seen,
        gpu_hours_lost_per_month=lost / months,
        lost_usd_per_month=(lost / months * usd_gpu_h) if usd_gpu_h is not None else None,
        fix_vcpu_hours_per_month=fix_vcpu_h / months,
        fix_usd_per_month=fix_vcpu_h / months * book.vcpu.usd_per_vcpu_hour,
        warnings=tuple(warnings),
        gpu_hours_lost_per_month_interval=(lost_lo / months, lost_hi / months),
        decision_basis=plan.basis,
        cost_reason=cost_reason,
        span_hours=span_h,
        fix_vcpu_hours=fix_vcpu_h,
        usd_per_gpu_hour=usd_gpu_h,
        lost_usd_per_month_interval=None
        if usd_gpu_h is None
        else (lost_lo / months * usd_gpu_h, lost_hi / months * usd_gpu_h),
        share_gpu_hours_lost=lost / gpu_hours if gpu_hours else 0.0,
        calibrated=calibration.calibrated,
        extrapolated_from=calibration.extrapolated_from,
        **_measured_fields(plan),
        gpu_hours_measured=t.gpu_hours_measured,
        gpu_hours_lost_measured=t.held,
        gpu_hours_lost_model=t.model_lost,
        loss_disagreement=t.disagreement,
        wait_curve=plan.wait_curve,
    )


def _assumptions(
    q: PartitionQuery, ctx: RecommendContext, group_basis: Sequence[str]
) -> dict[str, Any]:
    params, vcpu = ctx.params, ctx.book.vcpu
    basis = capacity_settings(params)[1]
    # the basis the groups' answers rest on (most of them, where they differ)
    shown = Counter(group_basis).most_common(1)[0][0] if group_basis else basis
    return {
        "default_cpus_per_gpu": "the job recommendation's cores at the group's typical GPUs "
        "(capacity model or 2 + N, see decision_basis), or where the group's measured CPU "
        "pressure answers, the measured curve's (see basis)",
        "min_cpus_per_gpu": f"TTFT within {q.min_tolerance:.0%} of ample cores",
        "prediction_gpus": "GPU-hour weighted median GPUs per job of the group",
        "gpu_time_lost": "for a job whose cgroup CPU pressure was measured, its GPU-hours x its "
        "stall share (between PSI full and some; the point is some); for the others, "
        "GPU-hours x (1 - slowdown(recommended) / slowdown(job's cores)) for "
        "jobs below the recommendation, as if every GPU job were an LLM server "
        "bound by TTFT (an upper bound for training and batch jobs); the slowdown: the most the "
        "predicted wait allows where the wait model decides, else the fitted TTFT curve; the "
        "interval: 5-95% over the fit's series-bootstrap refits",
        "default_basis": basis,
        "fix_cost": "(recommended x GPUs - CPUs) x elapsed hours of the jobs below, x "
        f"{vcpu.usd_per_vcpu_hour} $/vCPU-hour ({vcpu.basis}, {vcpu.as_of})",
        "lost_usd": "lost GPU-hours x the reference instance's $/GPU-hour",
        "per_month": f"totals over the observed span (first start to last end) / "
        f"{DAYS_PER_MONTH} days; a span shorter than that gives its totals, not a rate",
        "workload": {
            "model_params_b": q.workload.model_params_b or slowdown.REF_MODEL_PARAMS_B,
            "load_rps": q.workload.load_rps or slowdown.REF_LOAD_RPS,
            "prompt_tokens": q.workload.prompt_tokens or int(slowdown.REF_PROMPT_TOKENS),
        },
        "model_fitted_at": params.meta.get("fitted_at"),
        "calibrated_platforms": list(params.meta.get("platforms_seen") or []),
        "basis_sentence": basis_sentence(shown),
    }


def recommend_partitions(
    q: PartitionQuery,
    progress: ProgressFn = no_progress,
    ctx: RecommendContext | None = None,
) -> PartitionReport:
    """Per (partition, GPU family) of the observed jobs: DefCpuPerGPU and its effect. Without
    ``ctx``, the query's own files are loaded for this one call."""
    from advisor.errors import NotFoundError

    check_tolerance(q.tolerance)
    check_tolerance(q.min_tolerance, "--min-tolerance")
    check_max_wait(q.max_wait)
    if ctx is None:
        path = resolve_db_path(q.db)
        if not path.exists():  # before loading the curve, as the message is about the jobs
            raise NotFoundError(
                f"{path}: no such database; a partition recommendation needs "
                f"the observed jobs: load them first with `advisor ingest FILE "
                f"--db {path}`"
            )
        with RecommendContext.open(
            db=q.db, fit_file=q.model_file, pricing_file=q.pricing_file
        ) as own:
            return recommend_partitions(q, progress, own)
    con = _checked_connection(q, ctx)
    buckets: dict[tuple[str | None, str], list[tuple[Any, ...]]] = defaultdict(list)
    for r in _job_mix(con, q):
        buckets[(r[0], r[1])].append(r)
    from advisor.pressure.summary import any_records

    measured = any_records(con)
    plans = _plan_groups(q, ctx, con, buckets, progress, measured)
    # every group's rows against its recommendation, in one evaluation of the curve
    every = [(r, plans[key]) for key, rows in buckets.items() for r in rows]
    starved_all = starvation(
        ctx.params,
        cpus=[r[3] for r, _ in every],
        gpus=[r[4] for r, _ in every],
        gpu_hours=[float(r[7]) for r, _ in every],
        elapsed_s=[r[6] for r, _ in every],
        recommended_cores_per_gpu=[p.default for _, p in every],
        platform=[p.platform for _, p in every],
        workload=q.workload,
    )
    split = loss_split(
        measured_mix(con, q) if measured else {},
        [(r[0], r[1], r[3], r[4]) for r, _ in every],
        [float(r[7]) for r, _ in every],
        starved_all,
    )
    # every group's P25 and P50 cores per GPU (job-weighted), in one pass
    pct = job_percentiles_by_group(
        [r[3] / r[4] for r, _ in every],
        [int(r[5]) for r, _ in every],
        np.repeat(np.arange(len(buckets)), [len(rows) for rows in buckets.values()]),
        (0.25, 0.50),
    )
    out = []
    first_row = 0
    for n, (key, rows) in enumerate(buckets.items()):
        part = slice(first_row, first_row + len(rows))
        first_row += len(rows)
        out.append(_group_row(key, rows, plans[key], part, (starved_all, split, pct[n]), ctx))
    return PartitionReport(tuple(out), _assumptions(q, ctx, [p.basis for p in plans.values()]))


def recommend_by_cluster(
    q: PartitionQuery,
    progress: ProgressFn = no_progress,
    ctx: RecommendContext | None = None,
) -> PartitionReport:
    """:func:`recommend_partitions` for each cluster of the query (every cluster the database
    holds when it names none), each row carrying its cluster: a partition is a cluster's, and
    two clusters' partitions of one name are two partitions with their own jobs and answer."""
    if ctx is None:
        with RecommendContext.open(
            db=q.db, fit_file=q.model_file, pricing_file=q.pricing_file
        ) as own:
            return recommend_by_cluster(q, progress, own)
    clusters = q.clusters
    if not clusters:
        from advisor.store import query

        con = ctx.connection()
        held = con.execute(query("recommend/clusters")).fetchall() if con is not None else []
        clusters = tuple(str(r[0]) for r in held)
    if not clusters:
        return recommend_partitions(q, progress, ctx)  # refuses a missing database by name
    rows: list[PartitionRecommendation] = []
    assumptions: dict[str, Any] = {}
    for cluster in clusters:
        report = recommend_partitions(replace(q, clusters=(cluster,)), progress, ctx)
        rows.extend(replace(r, cluster=cluster) for r in report.rows)
        assumptions = assumptions or report.assumptions
    return PartitionReport(tuple(rows), {**assumptions, "clusters": list(clusters)})
