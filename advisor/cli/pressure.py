"""`advisor pressure collect|import-prometheus|summary`: each GPU job's CPU pressure (Linux PSI
of its cgroup), collected on nodes or read from Prometheus, and summarised against cores per GPU
once `advisor ingest` has loaded the records."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Annotated

import typer

from advisor.cli._output import DbOption, FormatOption, OutputFormat, emit_json, emit_rows
from advisor.cli._parse import csv_list, pct

pressure_app = typer.Typer(
    help="CPU pressure (PSI) of jobs' cgroups: collect, import, summarise.", no_args_is_help=True
)
_TIME_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"]


@pressure_app.command(
    "collect",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def collect_cmd(
    ctx: typer.Context,
    cgroup_root: Annotated[
        str, typer.Option(metavar="DIR", help="The cgroup v2 mount point.")
    ] = "/sys/fs/cgroup",
    out: Annotated[str, typer.Option(metavar="FILE", help="Spool file to append records to.")] = "",
) -> None:
    """Append each Slurm job cgroup's CPU pressure under DIR to FILE (JSON lines); always exits
    0, errors go to stderr (or --log). Further options as the node script takes them
    (advisor/pressure/collector.py --help): --job, --cluster, --host, --no-steps,
    --job-dir-pattern, --max-ms, --log.
    """
    from advisor.errors import UsageError
    from advisor.pressure.collector import main

    if not out:
        raise UsageError("--out FILE: where to append the records")
    main(["--cgroup-root", cgroup_root, "--out", out, *ctx.args])


@pressure_app.command("import-prometheus")
def import_prometheus_cmd(
    url: Annotated[
        str, typer.Option(metavar="URL", help="The Prometheus server, http://HOST:PORT.")
    ],
    start: Annotated[dt.datetime, typer.Option(formats=_TIME_FORMATS, help="Period start (UTC).")],
    end: Annotated[dt.datetime, typer.Option(formats=_TIME_FORMATS, help="Period end (UTC).")],
    out: Annotated[str, typer.Option(metavar="FILE", help="Spool file to append records to.")],
    some_metric: Annotated[
        str, typer.Option(metavar="NAME", help="Counter of PSI 'some' stall seconds per job.")
    ] = "ceems_compute_unit_cpu_psi_seconds",
    full_metric: Annotated[
        str | None, typer.Option(metavar="NAME", help="Counter of PSI 'full' stall seconds.")
    ] = None,
    job_label: Annotated[
        str, typer.Option(metavar="LABEL", help="Label holding the job id.")
    ] = "uuid",
    host_label: Annotated[str, typer.Option(metavar="LABEL", help="Label holding the host.")] = (
        "hostname"
    ),
    selector: Annotated[
        str, typer.Option(metavar="MATCHERS", help='Extra label matchers, e.g. manager="slurm".')
    ] = "",
    cluster: Annotated[
        str | None, typer.Option(metavar="NAME", help="Cluster name written into each record.")
    ] = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Read each job's PSI counter from a Prometheus server (CEEMS or a cgroup exporter) for the
    period and append one record per job and host to FILE; then `advisor ingest FILE`."""
    from advisor.pressure.prometheus import PrometheusImport, import_prometheus

    n, skipped = import_prometheus(
        PrometheusImport(
            url=url,
            start=start,
            end=end,
            some_metric=some_metric,
            full_metric=full_metric,
            job_label=job_label,
            host_label=host_label,
            cluster=cluster,
            selector=selector,
        ),
        Path(out),
    )
    if skipped.total():
        sys.stderr.write(
            f"Warning: {skipped.total():,} series skipped: {skipped.not_a_job:,} not a Slurm job "
            f"(label {job_label}), {skipped.malformed:,} malformed, {skipped.no_time:,} with no "
            "sample time in the period\n"
        )
    if fmt is OutputFormat.json:
        emit_json(
            {
                "records": n,
                "out": out,
                "skipped_not_a_job": skipped.not_a_job,
                "skipped_malformed": skipped.malformed,
                "skipped_no_time": skipped.no_time,
            }
        )
        return
    sys.stderr.write(f"{n:,} records appended to {out}\n")


@pressure_app.command("summary")
def summary_cmd(
    by: Annotated[
        str,
        typer.Option(
            help="Group by, comma-separated: gpu_type, cores_per_gpu_bin, cluster, partition, "
            "account, user, month, gpu_count. Empty: overall."
        ),
    ] = "gpu_type,cores_per_gpu_bin",
    starved_psi: Annotated[
        float, typer.Option(help="Stall share (PSI some, 0-1) from which a job counts as stalled.")
    ] = 0.10,
    start: Annotated[
        dt.datetime | None,
        typer.Option(formats=_TIME_FORMATS, help="Jobs that started at or after this time (UTC)."),
    ] = None,
    end: Annotated[
        dt.datetime | None,
        typer.Option(formats=_TIME_FORMATS, help="Jobs that started before this time (UTC)."),
    ] = None,
    cluster: Annotated[list[str] | None, typer.Option(help="Only these clusters.")] = None,
    gpu_type: Annotated[list[str] | None, typer.Option(help="Only these GPU types.")] = None,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """Measured CPU pressure of GPU jobs per GPU type and cores-per-GPU bin: how much is
    measured, the stall shares, and the GPU-hours held by CPU waiting (between the full and
    some bounds)."""
    from advisor.derived.usage_months import UsageThresholds
    from advisor.pressure.summary import PressureQuery, headline, pressure_summary

    q = PressureQuery(
        by=csv_list([by]),
        thresholds=UsageThresholds(starved_psi_some=starved_psi),
        start=start,
        end=end,
        clusters=csv_list(cluster),
        gpu_types=csv_list(gpu_type),
    )
    rows = pressure_summary(db, q)
    head = headline(rows)
    if fmt is OutputFormat.json:
        emit_json({"groups": rows, "total": head})
        return
    if fmt is OutputFormat.csv:
        emit_rows(rows, fmt, columns=list(rows[0]) if rows else [*q.by, "jobs"])
        return
    table = []
    for r in rows:
        t = {k: r[k] for k in q.by}
        t["jobs"] = r["jobs"]
        t["measured"] = r["jobs_measured"]
        t["GPU-h measured"] = pct(r["share_measured"])
        t["stall some"] = pct(r["some_share"])
        t["stall full"] = pct(r["full_share"])
        t["some p90"] = pct(r["some_share_p90"])
        t["held GPU-h"] = (
            f"{r['held_gpu_hours_low']:,.0f}-{r['held_gpu_hours_high']:,.0f}"
            if r["jobs_measured"]
            else None
        )
        table.append(t)
    emit_rows(table, fmt, title="CPU pressure of GPU jobs (GPU-hour weighted)")
    share = head["share_measured"]
    sys.stderr.write(
        f"{head['jobs_measured']:,} of {head['jobs']:,} GPU jobs measured "
        f"({pct(share) or '0%'} of GPU-hours); GPU-hours held by CPU waiting, measured jobs "
        f"only: {head['held_gpu_hours_low']:,.0f} to {head['held_gpu_hours_high']:,.0f}\n"
    )


@pressure_app.command("synth")
def synth_cmd(
    out: Annotated[str, typer.Option(metavar="FILE", help="Spool file to append records to.")],
    share: Annotated[float, typer.Option(help="Share of GPU jobs (0-1) that get records.")] = 0.3,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 7,
    db: DbOption = None,
) -> None:
    """Synthetic pressure records for the GPU jobs in the database (their ids, nodes and times),
    stall shares falling with cores per GPU as the bench measured: the sample's demo data."""
    from advisor.errors import UsageError
    from advisor.pressure.synth import synth_pressure

    if not 0 < share <= 1:
        raise UsageError(f"--share {share:g}: a share of jobs in (0, 1]")
    n = synth_pressure(db, Path(out), share=share, seed=seed)
    sys.stderr.write(f"{n} records appended to {out}\n")


def register(app: typer.Typer) -> None:
    """Add this command group to the app."""
    app.add_typer(pressure_app, name="pressure")
