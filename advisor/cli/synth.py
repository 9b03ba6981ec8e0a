"""`advisor synth`: synthetic `sacct` records calibrated to the research's cluster figures."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli._output import FormatOption, OutputFormat, RichProgress, emit_rows


def synth_cmd(
    out: Annotated[
        Path,
        typer.Option("--out", "-o", metavar="FILE", help="File to write (.gz / .zst compress)."),
    ],
    records: Annotated[
        int, typer.Option("--records", "-n", metavar="N", help="Allocations to generate.")
    ] = 20_000,
    seed: Annotated[
        int, typer.Option("--seed", metavar="N", help="Random seed: same seed, same bytes.")
    ] = 0,
    step_share: Annotated[
        float,
        typer.Option(
            "--step-share",
            metavar="SHARE",
            help="Share of started jobs printed with step lines (0 to 1).",
        ),
    ] = 0.3,
    usage: Annotated[
        bool,
        typer.Option(
            "--usage/--no-usage",
            help="Add what jobs used: TotalCPU, CPUTimeRAW, TRESUsageInTot/Max.",
        ),
    ] = False,
    years: Annotated[
        int,
        typer.Option(
            "--years", metavar="N", min=1, max=50, help="Years the submit times spread over."
        ),
    ] = 1,
    users: Annotated[
        int, typer.Option("--users", metavar="N", min=2, help="Users who submit the jobs.")
    ] = 1100,
    output: Annotated[
        str,
        typer.Option(
            "--as",
            metavar="[sacct-text|sacct-json|jobcomp]",
            help="What to write (sacct-json and jobcomp: samples only).",
        ),
    ] = "sacct-text",
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Generate realistic `sacct -P` text calibrated to the research's cluster figures."""
    from advisor.ingest.synth import SynthConfig, generate_as

    with RichProgress(unit="lines") as progress:
        result = generate_as(
            SynthConfig(
                records=records,
                seed=seed,
                step_share=step_share,
                usage=usage,
                years=years,
                users=users,
            ),
            out,
            output,
            progress,
        )
    emit_rows([result], fmt)


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.command("synth")(synth_cmd)
