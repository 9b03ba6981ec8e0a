"""`advisor ratios`: the CPU-per-GPU distributions of the loaded jobs.

Each command parses its options, calls one core function (advisor.ratios,
imported inside the command for a fast cold start) and formats the result.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.cli._output import DbOption, FormatOption, OutputFormat, emit_rows
from advisor.cli._parse import csv_list, finite_float, pct, utc_time
from advisor.cli.export import ParquetOption

if TYPE_CHECKING:
    from advisor import ratios


class WeightChoice(StrEnum):
    jobs = "jobs"
    gpu_hours = "gpu-hours"


def _thresholds(text: str) -> tuple[float, ...]:
    from advisor.errors import UsageError

    out = []
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            value = float(part)
        except ValueError:
            raise UsageError(
                f"--thresholds: {part.strip()!r} is not a number (e.g. --thresholds 1,2,4,8)"
            ) from None
        out.append(finite_float(value, "--thresholds"))
    return tuple(out)


def ratios_command(
    by: Annotated[
        str,
        typer.Option(
            metavar="FIELD,...",
            help="Group by, comma-separated: gpu_type, cluster, partition, account, user, "
            "month, gpu_count, interactive. Empty for one overall group.",
        ),
    ] = "gpu_type",
    weight: Annotated[
        WeightChoice,
        typer.Option(
            metavar="[jobs|gpu-hours]",
            help="What percentiles and the mean count: each job, or each GPU-hour.",
        ),
    ] = WeightChoice.jobs,
    thresholds: Annotated[
        str,
        typer.Option(
            metavar="CORES,...",
            help="Cores per GPU to report the share of jobs below (comma-separated).",
        ),
    ] = "1,2,4,8",
    start: Annotated[
        str | None,
        typer.Option(
            metavar="DATE",
            help="Jobs that started at or after this time (UTC): YYYY-MM-DD[THH:MM:SS].",
        ),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            metavar="DATE",
            help="Jobs that started before this time (UTC): YYYY-MM-DD[THH:MM:SS].",
        ),
    ] = None,
    state: Annotated[
        list[str] | None,
        typer.Option(metavar="STATE", help="Only these job states (repeat or comma-separate)."),
    ] = None,
    partition: Annotated[
        list[str] | None, typer.Option(metavar="NAME", help="Only these partitions.")
    ] = None,
    cluster: Annotated[
        list[str] | None, typer.Option(metavar="NAME", help="Only these clusters.")
    ] = None,
    gpu_type: Annotated[
        list[str] | None,
        typer.Option(metavar="TYPE", help="Only these canonical GPU types (H100, A100, ...)."),
    ] = None,
    account: Annotated[
        list[str] | None, typer.Option(metavar="NAME", help="Only these accounts.")
    ] = None,
    user: Annotated[
        list[str] | None, typer.Option(metavar="NAME", help="Only these users.")
    ] = None,
    min_gpus: Annotated[
        int | None, typer.Option(min=0, metavar="N", help="Only jobs with at least this many GPUs.")
    ] = None,
    excluded: Annotated[
        bool,
        typer.Option(
            "--excluded",
            help="Print the jobs left out and why (reason, jobs) instead of the summary.",
        ),
    ] = False,
    with_usage: Annotated[
        bool,
        typer.Option(
            "--usage",
            help="Add what the jobs used: CPU efficiency, busy cores and GPU utilisation, "
            "share of GPU-hours likely CPU-starved (see advisor usage).",
        ),
    ] = False,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
    parquet: ParquetOption = None,
) -> None:
    """CPU cores per GPU that jobs got: percentiles, mean and shares below thresholds, per group."""
    from advisor import ratios, store

    q = ratios.RatioQuery(
        by=csv_list([by]),
        weight=ratios.Weight(weight.value),
        thresholds_cores_per_gpu=_thresholds(thresholds),
        start=utc_time(start, "--start"),
        end=utc_time(end, "--end"),
        states=csv_list(state),
        partitions=csv_list(partition),
        clusters=csv_list(cluster),
        gpu_types=csv_list(gpu_type),
        accounts=csv_list(account),
        users=csv_list(user),
        min_gpus=min_gpus,
    )
    if parquet is not None:
        from advisor.export import open_dataset

        con = open_dataset(parquet)
    else:
        con = store.connect(db, read_only=True)
    try:
        if excluded:
            counts = ratios.excluded_counts(con, q)
            emit_rows(
                [{"reason": r, "jobs": n} for r, n in counts.items()],
                fmt,
                columns=["reason", "jobs"],
            )
            return
        report = ratios.ratio_summary(con, q)
        if with_usage:
            from advisor import usage

            usage_rows = usage.ratios_with_usage(con, q)
    finally:
        con.close()
    if parquet is None:  # once the answer stands: an error stays one line
        from advisor.cli._parse import warn_stale_data

        warn_stale_data(db)
    rows = usage_rows if with_usage else report.rows()
    if fmt is not OutputFormat.table:
        emit_rows(rows, fmt, columns=list(rows[0]) if rows else [*q.by, "jobs"])
        return
    table = _people_rows(rows, q, with_usage)
    what = "jobs" if q.weight is ratios.Weight.jobs else "GPU-hours"
    emit_rows(
        table,
        fmt,
        title=f"Cores per GPU (weighted by {what}; '<t' = share of {what} below t)",
    )
    _say_left_out(report, rows, q)


def _people_rows(
    rows: list[dict[str, Any]], q: ratios.RatioQuery, with_usage: bool
) -> list[dict[str, Any]]:
    """The table for people: the group, its size, the percentiles and the shares below each
    threshold (and the fair share, the usage evidence where asked), as percentages."""
    from advisor.ratios import Weight

    by_jobs = q.weight is Weight.jobs
    share = "share_jobs_below_" if by_jobs else "share_gpu_hours_below_"
    table = []
    for r in rows:
        t = {k: r[k] for k in q.by}
        t["jobs"] = r["jobs"]
        t["gpu_hours"] = f"{r['gpu_hours']:,.1f}"
        t.update({k: r[k] for k in ("p10", "p25", "p50", "p75", "p90")})
        t["mean"] = r["mean"]
        for k, v in r.items():
            if k.startswith(share) and not k.endswith("_fair_share"):
                t["<" + k.removeprefix(share)] = pct(v)
        if any(g["fair_share_cores_per_gpu"] is not None for g in rows):
            t["fair share"] = r["fair_share_cores_per_gpu"]
            t["<fair"] = pct(
                r["share_jobs_below_fair_share"]
                if by_jobs
                else r["share_gpu_hours_below_fair_share"]
            )
        if with_usage:
            t["CPU eff"] = pct(r["cpu_efficiency"])
            t["GPU util"] = pct(
                None if r["gpu_util_mean_pct"] is None else r["gpu_util_mean_pct"] / 100
            )
            t["starved GPU-h"] = pct(r["share_gpu_hours_starved"])
        table.append(t)
    return table


def _say_left_out(
    report: ratios.RatioReport, rows: list[dict[str, Any]], q: ratios.RatioQuery
) -> None:
    """On stderr: the jobs left out and why, or why no row matched."""
    if report.excluded:
        detail = ", ".join(f"{r} {n:,}" for r, n in report.excluded.items())
        sys.stderr.write(f"Excluded {report.excluded_jobs:,} jobs ({detail})\n")
    if not rows:
        filtered = any(v not in (None, ()) for v in q.job_filters().values())
        sys.stderr.write(
            "No GPU jobs with an allocation match these filters.\n"
            if filtered
            else "The data holds no GPU jobs with an allocation: load some with "
            "`advisor ingest FILE`.\n"
        )


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.command("ratios")(ratios_command)
