"""CLI commands of the ratios domain: ``advisor ratios``, ``advisor nodes ingest|list``.

Each command parses its options, calls one core function (advisor.ratios / advisor.nodes,
imported inside the command for a fast cold start) and formats the result.
"""

from __future__ import annotations

import datetime as dt
import sys
from enum import StrEnum
from typing import Annotated

import typer

from advisor.cli._output import DbOption, FormatOption, OutputFormat, emit_json, emit_rows
from advisor.cli.export import ParquetOption


class WeightChoice(StrEnum):
    jobs = "jobs"
    gpu_hours = "gpu-hours"


def _csv_list(values: list[str] | None) -> tuple[str, ...]:
    """Repeated options and comma-separated values, flattened: ['a,b', 'c'] -> (a, b, c)."""
    out: list[str] = []
    for v in values or ():
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return tuple(out)


def _thresholds(text: str) -> tuple[float, ...]:
    from advisor.errors import UsageError

    out = []
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            out.append(float(part))
        except ValueError:
            raise UsageError(
                f"--thresholds: {part.strip()!r} is not a number (e.g. --thresholds 1,2,4,8)"
            ) from None
    return tuple(out)


def _time(value: str | None, flag: str) -> dt.datetime | None:
    """A date or date-time (ISO 8601; one with an offset is converted) as naive UTC."""
    if value is None:
        return None
    from advisor.errors import UsageError

    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{flag} {value!r}: not a date (YYYY-MM-DD, or YYYY-MM-DDTHH:MM:SS in UTC)"
        ) from None
    return t if t.tzinfo is None else t.astimezone(dt.UTC).replace(tzinfo=None)


def _pct(v: float | None) -> str | None:
    return None if v is None else f"{100 * v:.1f}%"


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
        by=_csv_list([by]),
        weight=ratios.Weight(weight.value),
        thresholds_cores_per_gpu=_thresholds(thresholds),
        start=_time(start, "--start"),
        end=_time(end, "--end"),
        states=_csv_list(state),
        partitions=_csv_list(partition),
        clusters=_csv_list(cluster),
        gpu_types=_csv_list(gpu_type),
        accounts=_csv_list(account),
        users=_csv_list(user),
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
    rows = usage_rows if with_usage else report.rows()
    if fmt is not OutputFormat.table:
        emit_rows(rows, fmt, columns=list(rows[0]) if rows else [*q.by, "jobs"])
        return
    share = "share_jobs_below_" if q.weight is ratios.Weight.jobs else "share_gpu_hours_below_"
    table = []
    for r in rows:
        t = {k: r[k] for k in q.by}
        t["jobs"] = r["jobs"]
        t["gpu_hours"] = f"{r['gpu_hours']:,.1f}"
        t.update({k: r[k] for k in ("p10", "p25", "p50", "p75", "p90")})
        t["mean"] = r["mean"]
        for k, v in r.items():
            if k.startswith(share) and not k.endswith("_fair_share"):
                t["<" + k.removeprefix(share)] = _pct(v)
        if any(g["fair_share_cores_per_gpu"] is not None for g in rows):
            t["fair share"] = r["fair_share_cores_per_gpu"]
            t["<fair"] = _pct(
                r["share_jobs_below_fair_share"]
                if q.weight is ratios.Weight.jobs
                else r["share_gpu_hours_below_fair_share"]
            )
        if with_usage:
            t["CPU eff"] = _pct(r["cpu_efficiency"])
            t["GPU util"] = _pct(
                None if r["gpu_util_mean_pct"] is None else r["gpu_util_mean_pct"] / 100
            )
            t["starved GPU-h"] = _pct(r["share_gpu_hours_starved"])
        table.append(t)
    what = "jobs" if q.weight is ratios.Weight.jobs else "GPU-hours"
    emit_rows(
        table,
        fmt,
        title=f"Cores per GPU (weighted by {what}; '<t' = share of {what} below t)",
    )
    if report.excluded:
        detail = ", ".join(f"{r} {n:,}" for r, n in report.excluded.items())
        sys.stderr.write(f"Excluded {report.excluded_jobs:,} jobs ({detail})\n")
    if not rows:
        sys.stderr.write("No GPU jobs with an allocation match these filters.\n")


nodes_app = typer.Typer(help="Node inventory from `scontrol show node -o`.", no_args_is_help=True)


@nodes_app.command("ingest")
def nodes_ingest(
    file: Annotated[
        str | None,
        # described in the docstring: typer 0.29 prints an argument's Python type in help
        typer.Argument(metavar="FILE", hidden=True, show_default=False),
    ] = None,
    live: Annotated[
        bool, typer.Option("--live", help="Run `scontrol show node -o` on this host.")
    ] = False,
    cluster: Annotated[
        str | None,
        typer.Option(
            metavar="NAME", help="The cluster these nodes belong to (as your jobs name it)."
        ),
    ] = None,
    gpu_types: Annotated[
        str | None,
        typer.Option(metavar="FILE", help="A site GPU type mapping (JSON: raw name -> family)."),
    ] = None,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """Load a node inventory (CPUs, GPUs and GPU type, partitions) into the database.

    FILE holds `scontrol show node -o` output; --live runs that command on this host instead.
    """
    from advisor import nodes, store
    from advisor.cli._output import RichProgress

    cfg = nodes.NodeIngestConfig(path=file, live=live, cluster=cluster, gpu_types=gpu_types)
    con = store.connect(db)
    try:
        with RichProgress() as progress:
            result = nodes.ingest_nodes(con, cfg, progress)
    finally:
        con.close()
    for r in result.rejects:
        sys.stderr.write(f"Rejected: {r.message()}\n")
    summary = {
        "source": result.source,
        "clusters": ",".join(result.clusters),
        "lines_read": result.lines_read,
        "nodes": result.nodes_read,
        "inserted": result.inserted,
        "updated": result.updated,
        "rejected": result.rejected,
    }
    if fmt is OutputFormat.json:
        emit_json({**summary, "clusters": list(result.clusters)})
    else:
        emit_rows([summary], fmt)


@nodes_app.command("list")
def nodes_list(
    cluster: Annotated[str | None, typer.Option(metavar="NAME", help="Only this cluster.")] = None,
    types: Annotated[
        bool,
        typer.Option(
            "--types", help="One row per GPU node type, with its fair share of cores per GPU."
        ),
    ] = False,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """The node inventory, or (--types) its GPU node types and their cores per GPU."""
    from advisor import store
    from advisor.cli._output import to_plain

    con = store.connect(db, read_only=True)
    try:
        if types:
            from advisor.ratios import fair_share

            rows = to_plain(fair_share(con, cluster))
        else:
            from advisor.nodes import list_nodes

            rows = to_plain(list_nodes(con, cluster))
    finally:
        con.close()
    if fmt is not OutputFormat.json:  # one cell: gpu,debug
        rows = [{**r, "partitions": ",".join(r["partitions"])} for r in rows]
    emit_rows(rows, fmt)


def register(app: typer.Typer) -> None:
    """Add this domain's commands to the app."""
    app.command("ratios")(ratios_command)
    app.add_typer(nodes_app, name="nodes")
