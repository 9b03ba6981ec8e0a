"""Gathering the monthly report: :func:`build_report` collects every number of one month (and
the month before, for comparison) into one frozen :class:`~advisor.report.records.MonthlyReport`
through the modules beside it: ``distribution`` (per GPU type), ``tables`` (per account and
partition, the starvation estimates, the policy), ``quality``, ``summary`` (the answer first,
its headline, usage), from the ``inputs`` loaded once and the ``months`` chosen.

Every number the report shows is a field of :class:`MonthlyReport`; rendering
(:mod:`advisor.report.render`) and publishing (:mod:`advisor.report.publish`) add none.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

import duckdb

from advisor.progress import ProgressFn, no_progress
from advisor.report.distribution import gpu_type_months, month_distribution
from advisor.report.inputs import ReportInputs
from advisor.report.months import Month
from advisor.report.quality import data_quality
from advisor.report.records import SMALL_SAMPLE_JOBS, MonthlyReport
from advisor.report.summary import (
    month_headline,
    month_summary,
    partition_clusters,
    pressure_section,
    usage_section,
)
from advisor.report.tables import (
    assumptions_in_words,
    below_recommendation,
    month_measured_mix,
    policy_compliance,
    starvation_estimates,
    warnings_for,
)


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
    mix = month_measured_mix(con, month, cluster)
    starvation = starvation_estimates(con, month, cluster, inputs, mix)
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
    assumptions = assumptions_in_words(inputs)
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
        starvation_warnings=warnings_for(starvation, inputs),
        policy=policy,
        quality=quality,
        notes=tuple(notes),
        summary=replace(
            month_summary(
                starvation,
                prev_starvation,
                accounts,
                gpu_types,
                inputs,
                partition_clusters(con, month, cluster),
                generated,
            ),
            headline=month_headline(
                con, month, cluster, starvation, gpu_types, inputs, usage, generated, mix
            ),
        )
        if inputs.recommendations
        else None,
        prev_distribution=prev_distribution,
        no_records=no_records,
        small_sample=small,
        usage=usage,
        pressure=pressure_section(con, month, cluster),
        measured_vs_model=tuple(
            {
                "cluster": r.cluster,
                "partition": r.partition,
                "gpu_type": r.gpu_type,
                "typical_gpus": r.typical_gpus,
                "def_cpu_per_gpu": r.def_cpu_per_gpu,
                "basis": r.basis,
                "model": r.model_def_cpu_per_gpu,
                "measured": r.measured_def_cpu_per_gpu,
                "measured_jobs": r.measured_jobs,
                "relation": r.model_vs_measured,
                "reason": r.measured_reason,
            }
            for r in inputs.recommendations
            if r.measured_jobs and (cluster is None or r.cluster in (None, cluster))
        ),
        wait_curves=wait_curves(inputs, cluster),
    )


WAIT_CHARTS = 4  # the report draws the wait curves of the groups that lose the most


def wait_curves(inputs: ReportInputs, cluster: str | None) -> tuple[dict[str, Any], ...]:
    """The model's predicted wait behind the recommendations, one per GPU type and typical GPU
    count (the same curve answers every partition of them), those losing the most first."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    rows = sorted(inputs.recommendations, key=lambda r: -r.gpu_hours_lost)
    for r in rows:
        key = (r.gpu_type, r.typical_gpus)
        if (
            not r.wait_curve
            or key in out
            or (cluster is not None and r.cluster not in (None, cluster))
        ):
            continue
        out[key] = {
            "gpu_type": r.gpu_type,
            "gpus": r.typical_gpus,
            "cores_per_gpu": r.model_def_cpu_per_gpu or r.def_cpu_per_gpu,
            "max_wait": inputs.max_wait,
            "curve": r.wait_curve,
        }
    return tuple(out.values())[:WAIT_CHARTS]
