"""CLI commands ``bench import`` and ``bench export``: other tools' result files in, llm-d
benchmark reports out. Each parses, calls one core function (advisor/harness/results/foreign.py,
advisor/harness/results/llmd.py), formats; ``bench.py`` adds them to the bench group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli._output import DbOption, FormatOption, OutputFormat, RichProgress, emit_rows

POINT_COLUMNS = [
    "point_id",
    "metric",
    "value",
    "cores",
    "gpus",
    "platform",
    "load_rps",
    "prompt_tokens",
    "source_ref",
]


def import_cmd(
    files: Annotated[
        list[Path],
        # described in the docstring: typer 0.29 prints an argument's Python type in help
        typer.Argument(metavar="FILE", hidden=True, show_default=False),
    ],
    tool: Annotated[str, typer.Option(help="auto | vllm | guidellm | aiperf.")] = "auto",
    cores: Annotated[
        int | None,
        typer.Option(min=1, help="CPU cores the engine ran on (when the file does not record it)."),
    ] = None,
    gpus: Annotated[int | None, typer.Option(min=1, help="GPUs the engine used.")] = None,
    platform: Annotated[
        str | None, typer.Option(help="GPU platform (H100, H200, ...), when the file lacks it.")
    ] = None,
    engine: Annotated[str | None, typer.Option(help="Serving engine (vllm, sglang, ...).")] = None,
    engine_version: Annotated[str | None, typer.Option(help="Engine version.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name, when the file lacks it.")] = None,
    model_params_b: Annotated[
        float | None, typer.Option(help="Model size in billions of parameters.")
    ] = None,
    workload: Annotated[
        str | None, typer.Option(help="Workload label (default: the tool's name).")
    ] = None,
    prompt_tokens: Annotated[
        int | None, typer.Option(min=1, help="Prompt tokens (default: the file's mean).")
    ] = None,
    calibration_csv: Annotated[
        Path | None, typer.Option(help="Write the points as a calibration CSV here.")
    ] = None,
    to_db: Annotated[
        bool, typer.Option("--to-db", help="Store the points in the database's calibration table.")
    ] = False,
    db: DbOption = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Import other benchmark tools' results as calibration points (needs the core count).

    Each FILE is a result of `vllm bench serve` (its saved JSON), a GuideLLM report or an
    NVIDIA AIPerf profile export.
    """
    from advisor.errors import InputError, UsageError
    from advisor.harness.results.foreign import ImportContext, import_results

    if model_params_b is not None and not 0 < model_params_b <= 100_000:
        raise UsageError(
            f"--model-params-b {model_params_b:g}: a model size in billions of parameters, "
            "above 0 and at most 100,000"
        )
    ctx = ImportContext(
        cores=cores,
        gpus=gpus,
        platform=platform,
        engine=engine,
        engine_version=engine_version,
        model=model,
        model_params_b=model_params_b,
        workload=workload,
        prompt_tokens=prompt_tokens,
    )
    with RichProgress() as progress:
        result = import_results(
            files,
            tool,
            ctx,
            db=db,
            to_db=to_db,
            calibration_csv=calibration_csv,
            progress=progress,
        )
    emit_rows(result.points, fmt, columns=POINT_COLUMNS, title="bench import")
    if result.problems:
        raise InputError(
            f"{len(result.problems)} file(s) not imported (the others were):\n  "
            + "\n  ".join(result.problems)
        )


def export_cmd(
    paths: Annotated[
        list[Path],
        # described in the docstring: typer 0.29 prints an argument's Python type in help
        typer.Argument(metavar="PATH", hidden=True, show_default=False),
    ],
    out: Annotated[Path, typer.Option(help="Folder for the reports (one JSON per run).")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="llm-d (the report format, llm-d-benchmark v0.1; summary as a table), "
            "or table|csv|json for the summary (the reports are llm-d).",
        ),
    ] = "llm-d",
) -> None:
    """Write bench runs as llm-d benchmark reports (cores, pinning, attacker/victim in metadata).

    Each PATH is a run folder or a run JSON file (.json, .json.gz) of `advisor bench run`.
    """
    from advisor.errors import InputError, UsageError
    from advisor.harness.results.llmd import FORMATS, export_runs

    if fmt in FORMATS:
        report_fmt, shown = fmt, OutputFormat.table
    elif fmt in {f.value for f in OutputFormat}:
        report_fmt, shown = FORMATS[0], OutputFormat(fmt)
    else:
        raise UsageError(
            f"--format {fmt!r}: use {', '.join(FORMATS)} or table, csv, json for the summary"
        )
    with RichProgress() as progress:
        result = export_runs(paths, out, report_fmt, progress)
    emit_rows(
        [{"report": w, "skipped": None} for w in result.written]
        + [{"report": None, "skipped": s} for s in result.skipped],
        shown,
        columns=["report", "skipped"],
        title="bench export",
    )
    if result.problems:
        raise InputError(
            f"{len(result.problems)} file(s) not exported (the others were):\n  "
            + "\n  ".join(result.problems)
        )


def add_commands(bench_app: typer.Typer) -> None:
    """Add ``import`` and ``export`` to the bench group."""
    bench_app.command("import")(import_cmd)
    bench_app.command("export")(export_cmd)
