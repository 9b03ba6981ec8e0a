"""The answer an admin comes for, per cluster and partition: GPU time lost each month to too few
CPU cores, what it is worth, what the fix costs, the ``DefCpuPerGPU`` to set, and the
``slurm.conf`` lines and Lua policy that set it.

Owns no number of its own: every figure is :func:`advisor.recommend.recommend_partitions`'
(run once per cluster, since each cluster has its own slurm.conf), and the snippets are
:mod:`advisor.policy`'s writers applied to those rows. The dashboard's Overview and the monthly
report's summary both read it.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.headline import (
    DataAge,
    Headline,
    MeasuredEvidence,
    UsageEvidence,
    data_age_of,
    headline_of,
    model_error_of,
)
from advisor.model.waitknee import DEFAULT_MAX_WAIT
from advisor.recommend import (
    DAYS_PER_MONTH,
    PartitionQuery,
    PartitionRecommendation,
    RecommendContext,
    Workload,
)

if TYPE_CHECKING:
    from advisor.datainfo import ClusterFreshness
    from advisor.ratios import BelowTargetReport, RatioGroup


@dataclass(frozen=True)
class FixQuery:
    """Which jobs to judge (empty tuples: all) and the workload the recommendation assumes."""

    db: str | None = None
    clusters: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    gpu_types: tuple[str, ...] = ()
    start: dt.datetime | None = None  # jobs started at or after (UTC)
    end: dt.datetime | None = None  # jobs started before (UTC)
    workload: Workload = Workload()
    tolerance: float = 0.10
    pricing_file: str | None = None
    model_file: str | None = None
    max_wait: float = DEFAULT_MAX_WAIT  # enough cores (recommend.decision.enough_sentence)


@dataclass(frozen=True)
class FixRow:
    """One (cluster, partition, GPU type): what is lost and what fixes it, per month of data (the
    totals of its span when its jobs span less than a month: no rate is scaled up from less)."""

    cluster: str
    partition: str | None
    gpu_type: str
    jobs: int
    gpu_hours: float
    p50_cores_per_gpu: float
    def_cpu_per_gpu: int
    share_gpu_hours_below: float  # 0-1
    gpu_hours_lost_per_month: float
    lost_usd_per_month: float | None  # None: no price for this GPU type
    fix_usd_per_month: float
    warnings: tuple[str, ...] = ()
    gres_type: str | None = None  # the GRES type users ask for, for the Lua policy
    min_cpus_per_gpu: int = 1
    span_hours: float = 0.0  # first start to last end of its jobs
    gpu_hours_lost_per_month_interval: tuple[float, float] = (0.0, 0.0)  # 5-95% over refits
    lost_usd_per_month_interval: tuple[float, float] | None = None  # None: not priced
    decision_basis: str = "2 + N"
    basis: str = "model"  # what set def_cpu_per_gpu: the measured curve or the model
    gpu_hours_measured: float = 0.0  # the span's GPU-hours in jobs with measured pressure
    gpu_hours_lost_measured: tuple[float, float] = (0.0, 0.0)  # their loss, full to some, span
    loss_disagreement: str | None = None

    @property
    def months(self) -> float:
        """The months the span's totals are divided by (at least one)."""
        return max(self.span_hours / HOURS_PER_MONTH, 1.0)

    @property
    def gpu_hours_per_month(self) -> float:
        """The GPU time the loss comes from, over the same period as the loss."""
        return self.gpu_hours / max(self.span_hours / HOURS_PER_MONTH, 1.0)


@dataclass(frozen=True)
class ClusterFix:
    """The settings of one cluster: ``slurm.conf`` lines and the Lua policy table."""

    cluster: str
    slurm_conf: str
    lua: str


@dataclass(frozen=True)
class FixPlan:
    """Every row, largest loss first, with totals and the settings per cluster."""

    rows: tuple[FixRow, ...]
    gpu_hours_lost_per_month: float
    lost_usd_per_month: float
    fix_usd_per_month: float
    settings: tuple[ClusterFix, ...]
    assumptions: dict[str, Any] = field(default_factory=dict)
    span_hours: float = 0.0  # the longest span of any row's jobs
    calibrated_platforms: tuple[str, ...] = ()  # the platforms the curve was fitted on
    model_error: float | None = None  # the fit's held-out relative error (headline.model_error_of)

    def headline(self, data_age: DataAge, usage: UsageEvidence | None = None) -> Headline:
        """The totals with their interval, share, basis and calibration (:mod:`advisor.headline`).
        The rows' interval ends are added up: every row is judged with the same refits, so the
        rows rise and fall together and the added ends are those of the sum where they do."""
        basis = next(iter(dict.fromkeys(r.decision_basis for r in self.rows)), "2 + N")
        return headline_of(
            gpu_hours_lost=self.gpu_hours_lost_per_month,
            gpu_hours_lost_interval=(
                sum(r.gpu_hours_lost_per_month_interval[0] for r in self.rows),
                sum(r.gpu_hours_lost_per_month_interval[1] for r in self.rows),
            ),
            gpu_hours=sum(r.gpu_hours_per_month for r in self.rows),
            lost_usd=self.lost_usd_per_month,
            lost_usd_interval=(
                sum((r.lost_usd_per_month_interval or (0.0, 0.0))[0] for r in self.rows),
                sum((r.lost_usd_per_month_interval or (0.0, 0.0))[1] for r in self.rows),
            ),
            period=self.period,
            decision_basis=basis,
            gpu_types=sorted({r.gpu_type for r in self.rows}),
            platforms_seen=self.calibrated_platforms,
            data_age=data_age,
            usage=usage,
            model_error=self.model_error,
            measured=self.measured_evidence(),
        )

    def measured_evidence(self) -> MeasuredEvidence:
        """The rows' measured share and the loss their measured jobs held, per the plan's
        period (:class:`advisor.headline.MeasuredEvidence`)."""
        gpu_hours = sum(r.gpu_hours_per_month for r in self.rows)
        measured = sum(r.gpu_hours_measured / r.months for r in self.rows)
        return MeasuredEvidence.of(self.rows, measured, gpu_hours)

    @property
    def per_month(self) -> bool:
        """Whether the ``*_per_month`` figures are rates (else totals of less than a month)."""
        return self.span_hours >= HOURS_PER_MONTH

    @property
    def main_row(self) -> FixRow | None:
        """The row with the most GPU-hours: whose recommendation most jobs' time gets (the
        Trends page's threshold starts at its ``def_cpu_per_gpu``)."""
        return max(self.rows, key=lambda r: (r.gpu_hours, -r.def_cpu_per_gpu), default=None)

    @property
    def period(self) -> str:
        """What the ``*_per_month`` figures cover, in words: "per month", or "in the 1 hour of
        data" when the data span less than a month."""
        return period_words(self.span_hours)


HOURS_PER_MONTH = DAYS_PER_MONTH * 24.0


def span_words(hours: float) -> str:
    """A span of data as a person says it: "10 minutes", "1 hour", "5 hours", "3 days"."""
    if hours < 1.0:
        n, unit = max(round(hours * 60.0), 1), "minute"
    elif hours < 48.0:
        n, unit = round(hours), "hour"
    else:
        n, unit = round(hours / 24.0), "day"
    return f"{n:g} {unit}{'' if n == 1 else 's'}"


def period_words(span_hours: float) -> str:
    """The period of a figure: "per month" for a month of data or more, else what the totals
    cover ("in the 3 days of data"), so that no figure reads as a rate it is not."""
    if span_hours >= HOURS_PER_MONTH:
        return "per month"
    return f"in the {span_words(span_hours)} of data"


def _clusters(db: str | None) -> tuple[str, ...]:
    from advisor import datainfo, store

    con = store.connect(db, read_only=True)
    try:
        return datainfo.filter_options(con).clusters
    finally:
        con.close()


def settings_for(
    cluster: str,
    recs: Sequence[PartitionRecommendation | FixRow],
    generated_at: dt.datetime | None = None,
) -> ClusterFix:
    """The ``slurm.conf`` lines and Lua policy that set these recommendations (stamped with
    ``generated_at``, default now, so that a rerun of the same data can write the same text)."""
    from advisor import policy

    rules: dict[tuple[str, str], policy.PolicyRule] = {}
    for r in recs:
        if not r.partition:
            continue
        gres = r.gres_type or (policy.WILDCARD if r.gpu_type == "(untyped)" else r.gpu_type)
        rules[(r.partition, gres.lower())] = policy.PolicyRule(
            r.partition,
            gres.lower(),
            r.min_cpus_per_gpu,
            r.def_cpu_per_gpu,
            policy.Mode.set_default_when_unset,
        )
    when = generated_at or dt.datetime.now(dt.UTC)
    now = when.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    pol = policy.Policy(
        policy.POLICY_VERSION,
        now,
        f"advisor, cluster {cluster}",
        tuple(sorted(rules.values(), key=lambda x: (x.partition, x.gpu_type))),
    )
    try:
        conf = policy.to_slurm_conf(pol)
    except Exception as exc:  # a partition name slurm.conf cannot hold: say so in the snippet
        conf = f"# {exc}\n"
    return ClusterFix(cluster, conf, policy.to_lua(pol))


def _partition_query(q: FixQuery, cluster: str) -> PartitionQuery:
    return PartitionQuery(
        db=q.db,
        clusters=(cluster,),
        start=q.start,
        end=q.end,
        gpu_type=q.gpu_types[0] if len(q.gpu_types) == 1 else None,
        partition=q.partitions[0] if len(q.partitions) == 1 else None,
        workload=q.workload,
        tolerance=q.tolerance,
        max_wait=q.max_wait,
    )


def fix_plan(q: FixQuery, con: Any = None) -> FixPlan:
    """Per cluster and (partition, GPU type): the loss, its value, the fix and its cost.
    ``con``: an open connection to ``q.db`` to read instead of opening one (left open)."""
    from advisor.recommend import recommend_partitions

    clusters = q.clusters or _clusters(q.db)
    rows: list[FixRow] = []
    settings: list[ClusterFix] = []
    assumptions: dict[str, Any] = {}
    platforms: tuple[str, ...] = ()
    model_error: float | None = None
    reports = []
    if clusters:  # the curve and the prices once for every cluster's recommendation
        with RecommendContext.open(
            db=q.db, fit_file=q.model_file, pricing_file=q.pricing_file, con=con
        ) as ctx:
            platforms = tuple(ctx.params.meta.get("platforms_seen") or ())
            model_error = model_error_of(ctx.params.meta)
            reports = [
                (cluster, recommend_partitions(_partition_query(q, cluster), ctx=ctx))
                for cluster in clusters
            ]
    for cluster, report in reports:
        assumptions = report.assumptions
        recs = [
            r
            for r in report.rows
            if (not q.partitions or r.partition in q.partitions)
            and (not q.gpu_types or r.gpu_type in q.gpu_types)
        ]
        if not recs:
            continue
        settings.append(settings_for(cluster, recs))
        rows.extend(
            FixRow(
                cluster=cluster,
                partition=r.partition,
                gpu_type=r.gpu_type,
                jobs=r.jobs,
                gpu_hours=r.gpu_hours,
                p50_cores_per_gpu=r.p50_cores_per_gpu,
                def_cpu_per_gpu=r.def_cpu_per_gpu,
                share_gpu_hours_below=r.share_gpu_hours_below,
                gpu_hours_lost_per_month=r.gpu_hours_lost_per_month,
                lost_usd_per_month=r.lost_usd_per_month,
                fix_usd_per_month=r.fix_usd_per_month,
                warnings=r.warnings,
                gres_type=r.gres_type,
                min_cpus_per_gpu=r.min_cpus_per_gpu,
                span_hours=r.span_hours,
                gpu_hours_lost_per_month_interval=r.gpu_hours_lost_per_month_interval,
                lost_usd_per_month_interval=r.lost_usd_per_month_interval,
                decision_basis=r.decision_basis,
                basis=r.basis,
                gpu_hours_measured=r.gpu_hours_measured,
                gpu_hours_lost_measured=r.gpu_hours_lost_measured,
                loss_disagreement=r.loss_disagreement,
            )
            for r in recs
        )
    rows.sort(key=lambda r: (-r.gpu_hours_lost_per_month, r.cluster, r.partition or ""))
    return FixPlan(
        rows=tuple(rows),
        gpu_hours_lost_per_month=sum(r.gpu_hours_lost_per_month for r in rows),
        lost_usd_per_month=sum(r.lost_usd_per_month or 0.0 for r in rows),
        fix_usd_per_month=sum(r.fix_usd_per_month for r in rows),
        settings=tuple(settings),
        assumptions=assumptions,
        span_hours=max((r.span_hours for r in rows), default=0.0),
        calibrated_platforms=platforms,
        model_error=model_error,
    )


def merge(
    plans: Sequence[FixPlan],
    partitions: Sequence[str] = (),
    gpu_types: Sequence[str] = (),
    clusters: Sequence[str] = (),
) -> FixPlan:
    """Plans as one, narrowed to ``clusters``, ``partitions`` and ``gpu_types`` (empty: all).
    A partition's recommendation depends on its own jobs only, so narrowing a plan gives the
    plan of the narrower query: the dashboard computes one plan of every cluster per month
    range and narrows it, instead of asking the model again for every filter change."""
    rows = sorted(
        (
            r
            for p in plans
            for r in p.rows
            if (not clusters or r.cluster in clusters)
            and (not partitions or r.partition in partitions)
            and (not gpu_types or r.gpu_type in gpu_types)
        ),
        key=lambda r: (-r.gpu_hours_lost_per_month, r.cluster, r.partition or ""),
    )
    by_cluster: dict[str, list[FixRow]] = {}
    for r in rows:
        by_cluster.setdefault(r.cluster, []).append(r)
    return FixPlan(
        rows=tuple(rows),
        gpu_hours_lost_per_month=sum(r.gpu_hours_lost_per_month for r in rows),
        lost_usd_per_month=sum(r.lost_usd_per_month or 0.0 for r in rows),
        fix_usd_per_month=sum(r.fix_usd_per_month for r in rows),
        settings=tuple(settings_for(c, by_cluster[c]) for c in sorted(by_cluster)),
        assumptions=next((p.assumptions for p in plans if p.assumptions), {}),
        span_hours=max((r.span_hours for r in rows), default=0.0),
        calibrated_platforms=next(
            (p.calibrated_platforms for p in plans if p.calibrated_platforms), ()
        ),
        model_error=next((p.model_error for p in plans if p.model_error is not None), None),
    )


def plan_headline(
    con: Any,
    plan: FixPlan,
    q: FixQuery,
    now: dt.datetime | None = None,
    freshness: Sequence[ClusterFreshness] | None = None,
) -> Headline:
    """The plan's :class:`~advisor.headline.Headline` for the jobs ``q`` selects: the age of the
    newest record of its clusters (at ``now``, default now) and, where jobs carry their own
    usage, the GPU time in jobs whose usage looks starved, over the plan's period.
    ``freshness``: :func:`advisor.datainfo.freshness` of ``con`` when the caller holds it (a
    scan of every job, which depends on the data alone, not on ``q``)."""
    from advisor import datainfo
    from advisor.model import slowdown
    from advisor.usage import UsageQuery, usage_summary

    if freshness is None:
        freshness = datainfo.freshness(con)
    fresh = [f for f in freshness if not q.clusters or f.cluster in q.clusters]
    age = data_age_of(
        (t for f in fresh for t in (f.last_submit, f.last_end)), now or dt.datetime.now(dt.UTC)
    )
    if not plan.rows:
        return plan.headline(age)
    uq = UsageQuery(
        by=(),
        start=q.start,
        end=q.end,
        clusters=q.clusters,
        partitions=q.partitions,
        gpu_types=q.gpu_types,
    )
    used = usage_summary(con, uq)
    months = max(plan.span_hours / HOURS_PER_MONTH, 1.0)
    evidence = UsageEvidence(
        gpu_hours_starved=used.overall.starved_gpu_hours / months,
        share_gpu_hours_with_usage=used.advice.share_gpu_hours_with_usage,
        trust=used.advice.trust,
        gpu_hours_lost_starved=lost_in_starved_jobs(
            con,
            slowdown.load_params(q.model_file),
            uq,
            {(r.cluster, r.partition, r.gpu_type): r.def_cpu_per_gpu for r in plan.rows},
            workload=q.workload,
        )
        / months,
    )
    return plan.headline(age, evidence)


def lost_in_starved_jobs(
    con: Any,
    params: Any,
    uq: Any,
    recommended: Mapping[tuple[Any, ...], int],
    keys: tuple[str, ...] = ("cluster", "partition", "gpu_type"),
    workload: Workload | None = None,  # None: the model's reference, as the report's estimate
) -> float:
    """The GPU-hours lost (:func:`advisor.recommend.starvation`, against the recommendation of
    each job's ``keys`` in ``recommended``) by the jobs of ``uq`` whose own usage looks starved:
    the part of the loss that rests on evidence. Jobs of no recommended group count nothing.
    ``keys`` are among cluster, partition and GPU type: the jobs come grouped by those and
    their shape (:func:`advisor.usage.starved_mix`)."""
    from advisor.recommend import starvation
    from advisor.usage import starved_mix

    jobs = [j for j in starved_mix(con, uq) if tuple(j[k] for k in keys) in recommended]
    if not jobs:
        return 0.0
    return starvation(
        params,
        cpus=[j["cpus"] for j in jobs],
        gpus=[j["gpus"] for j in jobs],
        gpu_hours=[float(j["gpu_hours"]) for j in jobs],
        elapsed_s=[j["elapsed_s"] or 0 for j in jobs],
        recommended_cores_per_gpu=[recommended[tuple(j[k] for k in keys)] for j in jobs],
        platform=[None if j["gpu_type"] == "(untyped)" else j["gpu_type"] for j in jobs],
        workload=workload or Workload(),
    ).gpu_hours_lost


def assumptions_in_words(workload: Workload, max_wait: float = DEFAULT_MAX_WAIT) -> str:
    """The workload a recommendation assumes, and what enough cores means, as an admin would
    say it (the definition in recommend.decision's one sentence)."""
    from advisor.model import slowdown
    from advisor.recommend.decision import enough_sentence

    size = workload.model_params_b or slowdown.REF_MODEL_PARAMS_B
    rps = workload.load_rps or slowdown.REF_LOAD_RPS
    tokens = int(workload.prompt_tokens or slowdown.REF_PROMPT_TOKENS)
    return (
        f"every GPU job is treated as an LLM server of a model of {size:g}B parameters taking "
        f"{rps:g} long requests per second of {tokens:,} prompt tokens; {enough_sentence(max_wait)}"
    )


# Who loses GPU time (the dashboard's Who page and the report's accounts table) -----------------

# Groups ranked by GPU-hours below their target before the loss estimate re-ranks them: the
# loss is the cube's GPU-hours below times a per-partition share, so it is computed for a pool.
RANKING_POOL = 100


@dataclass(frozen=True)
class WhoLoses:
    """One group (account or user, with its partition and GPU type) below its target: its full
    summary (``group``), the target, what ran below it and the GPU-hours that lost (estimated)."""

    group: RatioGroup
    target_cores_per_gpu: float
    jobs_below: int
    gpu_hours_below: float
    gpu_hours_lost: float  # the part of gpu_hours_below the partition's estimate says is lost
    flag: str  # what their job scripts should say, e.g. "--cpus-per-gpu=3"


def recommended_targets(
    recs: Mapping[tuple[str | None, str], PartitionRecommendation],
) -> tuple[tuple[str | None, str, float], ...]:
    """The targets of :class:`advisor.ratios.TargetQuery` that are the recommendation: each
    (partition, GPU type)'s ``DefCpuPerGPU``."""
    return tuple(
        (partition, gpu_type, float(r.def_cpu_per_gpu))
        for (partition, gpu_type), r in sorted(recs.items(), key=lambda kv: str(kv[0]))
    )


def lost_share(
    recs: Mapping[tuple[str | None, str], PartitionRecommendation],
    partition: str | None,
    gpu_type: str,
) -> float:
    """Of the GPU-hours below the recommendation in this partition, the share
    :func:`advisor.recommend.recommend_partitions` estimates lost (0 without a recommendation)."""
    r = recs.get((partition, gpu_type))
    return r.gpu_hours_lost / r.gpu_hours_below if r and r.gpu_hours_below else 0.0


def rank_who_loses(
    report: BelowTargetReport,
    recs: Mapping[tuple[str | None, str], PartitionRecommendation],
    by_loss: bool = True,
) -> tuple[WhoLoses, ...]:
    """The groups of ``report`` (:func:`advisor.ratios.below_target`, whose keys include
    ``partition`` and ``gpu_type``), most GPU-hours lost first (``by_loss``: the targets are the
    recommendation, against which the loss is defined) else most GPU-hours below first."""
    rows = [
        WhoLoses(
            group=b.group,
            target_cores_per_gpu=b.target_cores_per_gpu,
            jobs_below=b.jobs_below,
            gpu_hours_below=b.gpu_hours_below,
            gpu_hours_lost=b.gpu_hours_below
            * lost_share(recs, b.group.keys["partition"], str(b.group.keys["gpu_type"])),
            flag=f"--cpus-per-gpu={math.ceil(b.target_cores_per_gpu)}",
        )
        for b in report.groups
    ]
    if by_loss:
        rows.sort(key=lambda w: (-w.gpu_hours_lost, -w.gpu_hours_below))
    else:
        rows.sort(key=lambda w: -w.gpu_hours_below)
    return tuple(rows)
