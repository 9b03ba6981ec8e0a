"""CLI of the usage domain: ``advisor usage``, what GPU jobs used beside what they were given.

Parses options, calls one core function of :mod:`advisor.usage` (imported inside the command
for a fast cold start) and formats the result.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from advisor.cli._output import (
    DbOption,
    EndOption,
    FormatOption,
    OutputFormat,
    StartOption,
    StarvedPsiOption,
    emit_json,
    emit_rows,
)
from advisor.cli._parse import csv_list, pct
from advisor.model.psilink import STARVED_PSI_DEFAULT


def usage_command(
    by: Annotated[
        str,
        typer.Option(
            help="Group by, comma-separated: gpu_type, cluster, partition, account, user, month, "
            "gpu_count, cores_per_gpu_bin (efficiency against cores per GPU). Empty: overall."
        ),
    ] = "gpu_type",
    jobs: Annotated[
        bool, typer.Option("--jobs", help="List jobs with their figures and evidence instead.")
    ] = False,
    verdict: Annotated[
        str | None,
        typer.Option(help="With --jobs: only starved, over_provisioned or ok jobs."),
    ] = None,
    model: Annotated[
        bool,
        typer.Option(
            "--model",
            help="Compare the model's verdict at each job's allocation with its measured CPU "
            "efficiency, per GPU type.",
        ),
    ] = False,
    limit: Annotated[int, typer.Option(help="With --jobs: at most this many jobs.")] = 100,
    starved_cpu_eff: Annotated[
        float, typer.Option(help="CPU efficiency (0-1) from which cores count as saturated.")
    ] = 0.9,
    starved_gpu_util: Annotated[
        float, typer.Option(help="Mean GPU utilisation (%) up to which GPUs count as idle.")
    ] = 50.0,
    idle_cores_per_gpu: Annotated[
        float, typer.Option(help="Idle cores per GPU from which a job is over-provisioned.")
    ] = 8.0,
    starved_psi: StarvedPsiOption = STARVED_PSI_DEFAULT,
    min_elapsed: Annotated[
        int, typer.Option(help="Jobs shorter than this (seconds) get no verdict.")
    ] = 600,
    start: StartOption = None,
    end: EndOption = None,
    cluster: Annotated[list[str] | None, typer.Option(help="Only these clusters.")] = None,
    partition: Annotated[list[str] | None, typer.Option(help="Only these partitions.")] = None,
    gpu_type: Annotated[list[str] | None, typer.Option(help="Only these GPU types.")] = None,
    account: Annotated[list[str] | None, typer.Option(help="Only these accounts.")] = None,
    user: Annotated[list[str] | None, typer.Option(help="Only these users.")] = None,
    pricing: Annotated[
        str | None,
        typer.Option(help="A pricing CSV of a site's own prices (columns: docs/model.md, Prices)."),
    ] = None,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """What GPU jobs used: CPU efficiency, GPU utilisation, likely CPU-starved and
    over-provisioned jobs (with the numbers), and whether to trust usage or allocation."""
    from advisor import store, usage

    q = usage.UsageQuery(
        by=csv_list([by]),
        thresholds=usage.UsageThresholds(
            starved_cpu_eff=starved_cpu_eff,
            starved_gpu_util_pct=starved_gpu_util,
            idle_cores_per_gpu=idle_cores_per_gpu,
            min_elapsed_s=min_elapsed,
            starved_psi_some=starved_psi,
        ),
        start=start,
        end=end,
        clusters=csv_list(cluster),
        partitions=csv_list(partition),
        gpu_types=csv_list(gpu_type),
        accounts=csv_list(account),
        users=csv_list(user),
        pricing_file=pricing,
    )
    con = store.connect(db, read_only=True)
    try:
        if jobs:
            emit_rows(usage.job_usage(con, q, verdict=verdict, limit=limit), fmt)
            return
        if model:
            emit_rows(usage.model_agreement(con, q), fmt, title="Model against measured usage")
            return
        report = usage.usage_summary(con, q)
    finally:
        con.close()
    if fmt is OutputFormat.json:
        emit_json(report.to_json())
        return
    rows = report.rows()
    if fmt is OutputFormat.csv:
        emit_rows(rows, fmt, columns=list(rows[0]) if rows else [*q.by, "jobs"])
        return
    table = []
    for r in rows:
        t = {k: r[k] for k in q.by}
        t["jobs"] = r["jobs"]
        t["with usage"] = pct(r["share_gpu_hours_with_cpu_usage"])
        t["cores/GPU"] = r["mean_cores_per_gpu"]
        t["CPU eff"] = pct(r["cpu_efficiency"])
        t["busy cores/GPU"] = r["busy_cores_per_gpu"]
        t["GPU util"] = None if r["gpu_util_mean_pct"] is None else f"{r['gpu_util_mean_pct']:.0f}%"
        t["starved GPU-h"] = pct(r["share_gpu_hours_starved"])
        t["starved $"] = None if r["starved_usd"] is None else f"{r['starved_usd']:,.0f}"
        t["over-prov jobs"] = r["over_provisioned_jobs"]
        table.append(t)
    emit_rows(table, fmt, title="What GPU jobs used (GPU-hour shares)")
    sys.stderr.write(f"Trust the {report.advice.trust}-based estimate: {report.advice.reason}\n")


def register(app: typer.Typer) -> None:
    """Add this domain's commands to the app."""
    app.command("usage")(usage_command)
