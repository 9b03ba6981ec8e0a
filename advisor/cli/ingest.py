"""CLI of the ingest domain: ``advisor ingest``, ``advisor jobs``, ``advisor synth``.

Each command parses its options, calls one core function (advisor.ingest / advisor.synth) and
formats the result; core modules are imported inside the commands to keep start-up fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli._output import FormatOption, OutputFormat, RichProgress, emit_rows


def synth_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write (.gz / .zst compress).")],
    records: Annotated[
        int, typer.Option("--records", "-n", help="Allocations to generate.")
    ] = 20_000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed: same seed, same bytes.")] = 0,
    step_share: Annotated[
        float, typer.Option("--step-share", help="Share of started jobs printed with step lines.")
    ] = 0.3,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Generate realistic `sacct -P` text calibrated to the research's cluster figures."""
    from advisor.synth import SynthConfig, generate

    with RichProgress() as progress:
        result = generate(
            SynthConfig(records=records, seed=seed, step_share=step_share), out, progress
        )
    emit_rows([result], fmt)


def register(app: typer.Typer) -> None:
    """Add this domain's commands to the app."""
    app.command("synth")(synth_cmd)
