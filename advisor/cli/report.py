"""``advisor report``: write the monthly HTML report (and PNG/PDF charts) for one month or all."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli._output import DbOption, FormatOption, OutputFormat, RichProgress, emit_rows
from advisor.cli._published_options import PublishedFitFileOption, PublishedPricingOption
from advisor.cli.export import ParquetOption


def report_cmd(
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", metavar="DIR", help="Folder for the reports (one subfolder per month)."
        ),
    ],
    month: Annotated[
        str | None,
        typer.Option(
            "--month",
            "-m",
            metavar="YYYY-MM|last",
            help="The month to report: YYYY-MM (UTC), or 'last' for the previous month.",
        ),
    ] = None,
    all_months: Annotated[
        bool, typer.Option("--all-months", help="Report every month in the database (a backlog).")
    ] = False,
    cluster: Annotated[
        str | None,
        typer.Option("--cluster", "-c", metavar="NAME", help="One cluster only (default: all)."),
    ] = None,
    png: Annotated[bool, typer.Option("--png", help="Also write each chart as PNG.")] = False,
    pdf: Annotated[bool, typer.Option("--pdf", help="Also write each chart as PDF.")] = False,
    top: Annotated[
        int,
        typer.Option(
            "--top", metavar="N", help="Rows in the 'most below the recommendation' tables."
        ),
    ] = 10,
    policy: Annotated[
        Path | None,
        typer.Option(
            "--policy",
            metavar="FILE",
            help="An exported policy (the Lua file the plugins load, or JSON) to check compliance against.",
        ),
    ] = None,
    model: PublishedFitFileOption = None,
    pricing: PublishedPricingOption = None,
    db: DbOption = None,
    parquet: ParquetOption = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Write the monthly report: cores per GPU against last month, who is below the
    recommendation (with the flag to use), GPU time lost to CPU starvation and its cost,
    policy compliance and data quality. Re-running a month replaces its report."""
    from advisor.report import ReportConfig, run_reports

    config = ReportConfig(
        out_dir=out,
        month=month,
        cluster=cluster,
        all_months=all_months,
        png=png,
        pdf=pdf,
        top_n=top,
        policy_file=policy,
        model_file=model,
        pricing_file=pricing,
    )
    with RichProgress() as progress:
        if parquet is None:
            results = run_reports(config, db, progress=progress)
        else:
            from advisor.export import dataset_as_db

            with dataset_as_db(parquet) as dataset_db:
                results = run_reports(config, dataset_db, progress=progress)
    emit_rows(
        [
            {
                "month": r.month,
                "cluster": r.cluster or "*",
                "gpu_jobs": r.gpu_jobs,
                "html": str(r.html_path),
                "images": len(r.image_paths),
            }
            for r in results
        ],
        fmt,
        title="Reports written",
    )


def register(app: typer.Typer) -> None:
    """Add this domain's commands to the app."""
    app.command("report")(report_cmd)
