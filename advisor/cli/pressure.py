"""`advisor pressure collect|import-prometheus|summary`: each GPU job's CPU pressure (Linux PSI
of its cgroup), collected on nodes or read from Prometheus, and summarised against cores per GPU
once `advisor ingest` has loaded the records."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Annotated

import typer

from advisor.cli._curve_options import MaxWaitOption
from advisor.cli._output import (
    TIME_FORMATS,
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
from advisor.model.waitknee import DEFAULT_MAX_WAIT

pressure_app = typer.Typer(
    help="CPU pressure (PSI) of jobs' cgroups: collect, import, summarise, link to the wait.",
    no_args_is_help=True,
)


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
    start: Annotated[dt.datetime, typer.Option(formats=TIME_FORMATS, help="Period start (UTC).")],
    end: Annotated[dt.datetime, typer.Option(formats=TIME_FORMATS, help="Period end (UTC).")],
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
    starved_psi: StarvedPsiOption = STARVED_PSI_DEFAULT,
    start: StartOption = None,
    end: EndOption = None,
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
    from advisor.pressure.curve import MIN_JOBS
    from advisor.wording import gpu_hours_range_text

    table = []
    for r in rows:
        few = " (few jobs)" if 0 < r["jobs_measured"] < MIN_JOBS else ""
        t = {k: r[k] for k in q.by}
        # the stall and what it held first: a narrow terminal keeps them
        t["stalled (some)"] = f"{pct(r['some_share'])}{few}" if r["jobs_measured"] else None
        t["GPU-h held by CPU waiting"] = (
            gpu_hours_range_text(r["held_gpu_hours_low"], r["held_gpu_hours_high"])
            if r["jobs_measured"]
            else None
        )
        t["stalled (full)"] = pct(r["full_share"])
        t["jobs measured"] = f"{r['jobs_measured']:,} of {r['jobs']:,}"
        t["share of GPU-h measured"] = pct(r["share_measured"])
        t["P90 job (some)"] = pct(r["some_share_p90"])
        table.append(t)
    emit_rows(table, fmt, title="CPU pressure of GPU jobs (GPU-hour weighted)")
    share = head["share_measured"]
    sys.stderr.write(
        f"{head['jobs_measured']:,} of {head['jobs']:,} GPU jobs measured "
        f"({pct(share) or '0%'} of GPU-hours); GPU-hours held by CPU waiting, measured jobs "
        f"only: {gpu_hours_range_text(head['held_gpu_hours_low'], head['held_gpu_hours_high'])}"
        f"; stalled: --starved-psi {starved_psi:g} counts a job as starved; (few jobs): fewer "
        f"than {MIN_JOBS} measured, no figure to decide from\n"
    )


@pressure_app.command("curve")
def curve_cmd(
    by: Annotated[
        str,
        typer.Option(
            help="Group by, comma-separated: cluster, partition, gpu_type, gpu_count, account, "
            "user, month. The model's prediction needs gpu_count."
        ),
    ] = "cluster,partition,gpu_type,gpu_count",
    max_wait: MaxWaitOption = DEFAULT_MAX_WAIT,
    rps: Annotated[
        float | None,
        typer.Option(help="The load the model's prediction assumes (default: its reference)."),
    ] = None,
    prompt_tokens: Annotated[
        int | None, typer.Option(help="Prompt tokens the prediction assumes (default: 16384).")
    ] = None,
    start: StartOption = None,
    end: EndOption = None,
    cluster: Annotated[list[str] | None, typer.Option(help="Only these clusters.")] = None,
    partition: Annotated[list[str] | None, typer.Option(help="Only these partitions.")] = None,
    gpu_type: Annotated[list[str] | None, typer.Option(help="Only these GPU types.")] = None,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """The measured stall curve: per group and whole cores per GPU, the GPU-hour weighted PSI
    some share of the measured jobs with its 90% interval (jobs resampled), how many jobs
    measured it, its verdict against the threshold, the model's prediction beside it, and the
    fewest cores per GPU the measurement shows enough (docs/pressure.md)."""
    from advisor.pressure.curve import CurveQuery
    from advisor.recommend.measured import curve_report

    q = CurveQuery(
        by=csv_list([by]),
        start=start,
        end=end,
        clusters=csv_list(cluster),
        partitions=csv_list(partition),
        gpu_types=csv_list(gpu_type),
    )
    from advisor.store import connect

    con = connect(db, read_only=True)
    try:
        rep = curve_report(
            con, max_wait=max_wait, query=q, load_rps=rps, prompt_tokens=prompt_tokens
        )
    finally:
        con.close()
    if fmt is OutputFormat.json:
        emit_json(rep)
        return
    keys = rep["by"]
    flat = [
        {**{k: g[k] for k in keys}, "measured_cpus_per_gpu": g["measured_cpus_per_gpu"], **c}
        for g in rep["groups"]
        for c in g["cells"]
    ]
    if fmt is OutputFormat.csv:
        emit_rows(flat, fmt, columns=list(flat[0]) if flat else [*keys, "cores_per_gpu"])
        return
    table = [
        {
            **{k: r[k] for k in keys},
            "cores/GPU": "<1" if r["cores_per_gpu"] < 1 else r["cores_per_gpu"],
            "jobs": r["jobs"],
            "stall some [90%]": f"{r['measured']:.3f} [{r['measured_low']:.3f}-"
            f"{r['measured_high']:.3f}]",
            "verdict": r["verdict"],
            "model": None if r["predicted"] is None else f"{r['predicted']:.3f}",
            "model vs measured": r["model_vs_measured"],
        }
        for r in flat
    ]
    emit_rows(
        table, fmt, title=f"Measured stall by cores per GPU (threshold {rep['threshold']:.3f})"
    )
    decided = [g for g in rep["groups"] if g["measured_cpus_per_gpu"] is not None]
    sys.stderr.write(
        f"threshold {rep['threshold']:.3f}: {rep['threshold_basis']} (--max-wait {max_wait:.2f}); "
        f"{len(decided)} of {len(rep['groups'])} groups measured enough to answer "
        "DefCpuPerGPU (advisor recommend --partition uses it)\n"
    )


@pressure_app.command("link")
def link_cmd(
    max_wait: MaxWaitOption = DEFAULT_MAX_WAIT,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """The measured link between a job's CPU pressure (PSI) and the engine's run-queue wait:
    per role, executor and PSI scope the fit, the PSI share at --max-wait with its 90%
    interval, and the --starved-psi that --max-wait implies (docs/pressure.md)."""
    from advisor.model.psilink import link_report

    rep = link_report(max_wait)
    if fmt is OutputFormat.json:
        emit_json(rep)
        return
    if fmt is OutputFormat.csv:
        emit_rows(rep["links"], fmt, columns=list(rep["links"][0]) if rep["links"] else ["link"])
        return
    table = [
        {
            "role": r["role"],
            "executor": r["executor"],
            "PSI": f"{r['scope']} {r['kind']}",
            "phases": r["phases"],
            "series": r["series"],
            "slope": f"{r['b']:.2f}",
            f"PSI at wait {max_wait:.0%}": f"{r['psi_at_max_wait']:.3f} "
            f"({r['psi_low']:.3f}-{r['psi_high']:.3f})",
        }
        for r in rep["links"]
    ]
    emit_rows(table, fmt, title="CPU pressure against the engine's wait (bench phases)")
    if rep["starved_psi"] is None:
        sys.stderr.write("no link measured: --starved-psi keeps its default\n")
        return
    sys.stderr.write(
        f"--max-wait {max_wait:.2f} -> --starved-psi {rep['starved_psi']:.3f} "
        f"(90% {rep['starved_psi_low']:.3f}-{rep['starved_psi_high']:.3f}, {rep['basis']}); "
        f"the default is {rep['starved_psi_default']}\n"
    )


@pressure_app.command("synth")
def synth_cmd(
    out: Annotated[str, typer.Option(metavar="FILE", help="Spool file to append records to.")],
    share: Annotated[float, typer.Option(help="Share of GPU jobs (0-1) that get records.")] = 0.6,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 7,
    db: DbOption = None,
) -> None:
    """Synthetic pressure records for the GPU jobs in the database (their ids, nodes and times),
    each job's stall drawn from the measured mechanism (demand, wait model, PSI link) at its
    cores and GPUs: the sample's demo data."""
    from advisor.errors import UsageError
    from advisor.pressure.synth import synth_pressure

    if not 0 < share <= 1:
        raise UsageError(f"--share {share:g}: a share of jobs in (0, 1]")
    n = synth_pressure(db, Path(out), share=share, seed=seed)
    sys.stderr.write(f"{n} records appended to {out}\n")


def register(app: typer.Typer) -> None:
    """Add this command group to the app."""
    app.add_typer(pressure_app, name="pressure")
