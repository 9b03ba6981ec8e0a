"""The report's per-partition and per-account tables: who sits below the recommended cores per
GPU, the GPU time lost to too few cores and the price of the fix (with what those estimates
assume and the recommendations' warnings), and the month's jobs against the exported policy."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from advisor import store
from advisor.errors import AdvisorError
from advisor.ratios import TargetQuery, below_target
from advisor.recommend import MeasuredMix, PartitionRecommendation
from advisor.report.distribution import ratio_groups, ratio_query
from advisor.report.inputs import ReportInputs
from advisor.report.months import Month

if TYPE_CHECKING:
    from advisor.model.slowdown import CurveParams
    from advisor.pricing import PriceBook
    from advisor.recommend import Starvation
    from advisor.recommend.measured import LossSplit
from advisor.report.records import (
    BelowRecommendation,
    PolicyCompliance,
    PolicyRuleCompliance,
    StarvationEstimate,
)


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
    for g in ratio_groups(con, month, cluster, ("partition", "gpu_type"), thresholds):
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
                # a partition is set in slurm.conf, not in its users' job scripts
                flag=f"DefCpuPerGPU={rec.def_cpu_per_gpu}",
                gpu_hours_lost=below_h
                * fixplan.lost_share(recs, g.keys["partition"], str(g.keys["gpu_type"])),
            )
        )
    rows.sort(key=lambda b: (-b.gpu_hours_below, -b.jobs_below, b.name, b.gpu_type))
    return accounts, tuple(rows[:top_n])


def month_measured_mix(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None
) -> MeasuredMix:
    """The month's measured jobs per job-mix row (:func:`advisor.recommend.measured_mix`): read
    once per report month, by the loss split and the headline's measured share alike."""
    from advisor.recommend import PartitionQuery, measured_mix

    q = PartitionQuery(start=month.start, end=month.end, clusters=(cluster,) if cluster else ())
    return measured_mix(con, q)


def starvation_estimates(
    con: duckdb.DuckDBPyConnection,
    month: Month,
    cluster: str | None,
    inputs: ReportInputs,
    mix: MeasuredMix | None = None,
) -> tuple[StarvationEstimate, ...]:
    """Per (partition, GPU type): GPU time the month's jobs below the recommendation lost to
    CPU starvation, and what the missing cores would have cost.

    The loss and the missing cores are :func:`advisor.recommend.starvation`'s, the formula
    of :func:`advisor.recommend.recommend_partitions`, with the month's measured jobs losing
    what their own CPU pressure held (its split by measurement); the fix is priced at the
    per-vCPU price, the loss at the reference instance's $ per GPU-hour. ``mix``: the month's
    measured jobs where the caller read them (:func:`month_measured_mix`).
    """
    recs = _rec_index(inputs)
    if not recs or inputs.params is None or inputs.prices is None:
        return ()
    params, prices = inputs.params, inputs.prices
    rows = con.execute(
        store.render("report/job_mix", keys=""),
        {"start": month.start, "end": month.end, "cluster": cluster},
    ).fetchall()
    groups: dict[tuple[str | None, str], list[tuple]] = {}
    for r in rows:
        groups.setdefault((r[0], r[1]), []).append(r)
    # the month's measured jobs, whose loss is their own stall (recommend --partition's split)
    if mix is None:
        mix = month_measured_mix(con, month, cluster)
    out = []
    for key, members in groups.items():
        rec = recs.get(key)
        if rec is None:
            continue
        judged = judge_mix(params, prices, key, float(rec.def_cpu_per_gpu), members, mix)
        estimate = judged.estimate()
        if estimate is not None:
            out.append(estimate)
    out.sort(key=lambda e: (-e.gpu_hours_lost, str(e.partition), e.gpu_type))
    return tuple(out)


@dataclass(frozen=True)
class JudgedMix:
    """One partition and GPU type's job-mix rows judged against its recommended cores per GPU:
    the model's starvation per row, the loss split by measurement, and the prices."""

    partition: str | None
    gpu_type: str
    recommended_cores_per_gpu: float
    gpu_hours: np.ndarray  # per row
    starved: Starvation
    split: LossSplit
    usd_per_vcpu_hour: float
    usd_per_gpu_hour: float | None  # None: no price for the GPU type

    def estimate(self, rows: np.ndarray | None = None) -> StarvationEstimate | None:
        """The loss and the fix of ``rows`` (None: all), or None where none ran below."""
        pick = slice(None) if rows is None else rows
        below = self.starved.below[pick]
        if not below.any():
            return None
        gpu_h = self.gpu_hours[pick]
        extra = float(np.sum(self.starved.fix_rows[pick]))
        t = self.split.totals(rows)
        usd_gpu = self.usd_per_gpu_hour
        return StarvationEstimate(
            partition=self.partition,
            gpu_type=self.gpu_type,
            recommended_cores_per_gpu=self.recommended_cores_per_gpu,
            gpu_hours_below=float(gpu_h[below].sum()),
            gpu_hours_lost=t.lost,
            extra_cpu_hours=extra,
            usd_per_vcpu_hour=self.usd_per_vcpu_hour,
            usd_to_fix=extra * self.usd_per_vcpu_hour,
            usd_per_gpu_hour=usd_gpu,
            usd_lost=t.lost * usd_gpu if usd_gpu is not None else None,
            gpu_hours_lost_interval=t.interval,
            gpu_hours=float(gpu_h.sum()),
            gpu_hours_measured=t.gpu_hours_measured,
            gpu_hours_lost_measured=t.held,
            loss_disagreement=t.disagreement,
        )


def judge_mix(
    params: CurveParams,
    prices: PriceBook,
    key: tuple[str | None, str],
    answer: float,
    members: Sequence[tuple[Any, ...]],
    mix: MeasuredMix,
    keys: int = 0,
) -> JudgedMix:
    """``members``: report/job_mix rows of one (partition, GPU type) ``key``, with ``keys``
    more key columns before the row's own (the month and cluster of the loss by month); one
    starvation evaluation of them all at ``answer`` cores per GPU, their measured jobs losing
    what their own pressure held (``mix`` keyed as the rows are)."""
    from advisor.recommend import starvation
    from advisor.recommend.measured import loss_split

    partition, gpu_type = key
    platform = None if gpu_type == "(untyped)" else gpu_type
    k = keys
    gpu_h = np.array([float(m[k + 6]) for m in members])
    starved = starvation(
        params,
        cpus=[m[k + 2] for m in members],
        gpus=[m[k + 3] for m in members],
        gpu_hours=gpu_h,
        elapsed_s=[m[k + 5] for m in members],
        recommended_cores_per_gpu=answer,
        platform=platform,
    )
    split = loss_split(mix, [tuple(m[: k + 4]) for m in members], gpu_h.tolist(), starved)
    try:
        usd_gpu: float | None = prices.instance_for(platform or "").usd_per_gpu_hour
    except AdvisorError:
        usd_gpu = None
    return JudgedMix(
        partition, gpu_type, answer, gpu_h, starved, split, prices.vcpu.usd_per_vcpu_hour, usd_gpu
    )


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


def warnings_for(estimates: Sequence[StarvationEstimate], inputs: ReportInputs) -> tuple[str, ...]:
    """The recommendations' own warnings for the (partition, GPU type) rows the report shows."""
    recs = _rec_index(inputs)
    out: dict[str, None] = {}
    for e in estimates:
        rec = recs.get((e.partition, e.gpu_type))
        for w in rec.warnings if rec else ():
            out[f"{e.partition or '(no partition)'} / {e.gpu_type}: {w}"] = None
    return tuple(out)


def assumptions_in_words(inputs: ReportInputs) -> tuple[str, ...]:
    """What the estimates assume, as an admin would explain them to a head of computing."""
    from advisor.model import slowdown
    from advisor.recommend.decision import enough_sentence

    out = [
        "A job belongs to the month it started in (UTC) and counts whole, even when it ran on.",
        f"Recommended cores per GPU: per partition and GPU type, {enough_sentence()}; judged "
        "over every job in the database.",
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
