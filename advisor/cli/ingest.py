"""`advisor ingest`: load Slurm accounting records into the database.

Each command parses its options, calls one core function (advisor.ingest) and
formats the result; core modules are imported inside the commands to keep start-up fast.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from advisor.cli._output import (
    DbOption,
    OutputFormat,
    RichProgress,
    emit_rows,
    fail,
    stderr,
    terminal_text,
)
from advisor.cli._parse import utc_time
from advisor.errors import ExitCode

if TYPE_CHECKING:
    from advisor.ingest.records import FileOutcome, IngestSummary

_INPUT_FORMATS = ("sacct-text", "sacct-json", "jobcomp")
_SUMMARY_COLUMNS = (
    "source",
    "format",
    "compression",
    "lines_read",
    "rows_read",
    "inserted",
    "updated",
    "unchanged",
    "rejected",
    "duplicates",
    "seconds",
    "rows_per_s",
    "first_reasons",
)


def _output_format(value: str, input_format: str | None) -> tuple[OutputFormat, str | None]:
    """``ingest --format`` is the output format. Before --input-format existed it also took an
    input format name; the two sets of names do not overlap, so that spelling still works, with
    a note naming the new option."""
    if input_format is not None and input_format not in _INPUT_FORMATS:
        raise fail(
            f"--input-format {input_format!r}: use {', '.join(_INPUT_FORMATS)}", ExitCode.USAGE
        )
    if value in _INPUT_FORMATS:
        if input_format is not None and input_format != value:
            raise fail(
                f"--format {value} contradicts --input-format {input_format}", ExitCode.USAGE
            )
        sys.stderr.write(
            f"note: --format {value} names the input format; write --input-format {value} "
            "(--format is the output format: table, csv or json)\n"
        )
        return OutputFormat.table, value
    try:
        return OutputFormat(value), input_format
    except ValueError as exc:
        raise fail(
            f"--format {value!r}: use table, csv or json (the input format is --input-format "
            f"{'|'.join(_INPUT_FORMATS)})",
            ExitCode.USAGE,
        ) from exc


def ingest_cmd(
    files: Annotated[
        list[Path] | None,
        # described in the docstring: typer 0.29 prints an argument's Python type in help
        typer.Argument(metavar="FILE", hidden=True, show_default=False),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            metavar="[table|csv|json]",
            help="Output: a table for people, csv or json for programs.",
        ),
    ] = "table",
    input_format: Annotated[
        str | None,
        typer.Option(
            "--input-format",
            metavar="[sacct-text|sacct-json|jobcomp]",
            help="What the files hold (default: detected from their first bytes).",
        ),
    ] = None,
    delimiter: Annotated[
        str | None,
        typer.Option("--delimiter", metavar="TEXT", help="sacct --delimiter (default: detect)."),
    ] = None,
    fields: Annotated[
        str | None,
        typer.Option(
            "--fields",
            metavar="NAME,...",
            help="The columns of a header-less file (sacct -n), comma-separated.",
        ),
    ] = None,
    cluster: Annotated[
        str,
        typer.Option(
            "--cluster", metavar="NAME", help="Cluster name for rows whose source names none."
        ),
    ] = "default",
    tz: Annotated[
        str,
        typer.Option(
            "--tz",
            metavar="ZONE",
            help="Time zone of the times in text sources (e.g. Europe/Berlin); stored as UTC.",
        ),
    ] = "UTC",
    gpu_types: Annotated[
        Path | None,
        typer.Option(
            "--gpu-types", metavar="FILE", help="JSON mapping of site GPU names to families."
        ),
    ] = None,
    sacct: Annotated[
        bool, typer.Option("--sacct", help="Run sacct itself instead of reading files.")
    ] = False,
    start: Annotated[
        str | None,
        typer.Option("--start", metavar="DATE", help="--sacct: first day, YYYY-MM-DD (UTC)."),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option("--end", metavar="DATE", help="--sacct: end, exclusive, YYYY-MM-DD (UTC)."),
    ] = None,
    window: Annotated[
        float, typer.Option("--window", metavar="DAYS", help="--sacct: window length in days.")
    ] = 1.0,
    sacct_bin: Annotated[
        str, typer.Option("--sacct-bin", metavar="PROGRAM", help="--sacct: the sacct program.")
    ] = "sacct",
    db: DbOption = None,
) -> None:
    """Load Slurm accounting records into the database (idempotent; bad lines kept in rejects).

    Each FILE is sacct -P text, sacct --json or a jobcomp log, plain, .gz or .zst; its format
    is detected (or given with --input-format). Without FILEs, --sacct runs sacct itself.
    """
    from advisor.gputypes import load_site_mapping
    from advisor.ingest import (
        FileOutcome,
        IngestOptions,
        SacctWindowConfig,
        ingest_each,
        ingest_sacct,
    )

    out_fmt, input_format = _output_format(fmt, input_format)
    options = IngestOptions(
        input_format=input_format,
        delimiter=delimiter,
        fields=tuple(f.strip() for f in fields.split(",")) if fields else None,
        cluster=cluster,
        source_tz=tz,
        gpu_types=load_site_mapping(gpu_types) if gpu_types else None,
    )
    from advisor.ingest.stages import STAGE_NAMES

    sizes = {str(Path(f)): Path(f).stat().st_size for f in files or () if Path(f).is_file()}
    shown = RichProgress(unit="windows") if sacct else RichProgress(stages=STAGE_NAMES, sizes=sizes)
    with shown as progress:
        if sacct:
            if files:
                raise fail("give files or --sacct, not both", ExitCode.USAGE)
            t0, t1 = utc_time(start, "--start"), utc_time(end, "--end")
            if t0 is None or t1 is None:
                raise fail("--sacct needs --start and --end", ExitCode.USAGE)
            config = SacctWindowConfig(
                start=t0, end=t1, window=dt.timedelta(days=window), sacct_bin=sacct_bin
            )
            summaries = ingest_sacct(db, config, options, progress)
            outcomes = [FileOutcome(s.source, summary=s) for s in summaries]
        else:
            if not files:
                raise fail(
                    "give at least one file, or --sacct --start ... --end ...", ExitCode.USAGE
                )
            outcomes = ingest_each(db, files, options, progress)
            summaries = [o.summary for o in outcomes if o.summary is not None]
        from advisor.derived import refresh_after_load

        if summaries:  # ingest only ingests: the summaries readers use are rebuilt here
            refresh_after_load(db)
    _emit(outcomes, summaries, out_fmt)


def _emit(
    outcomes: list[FileOutcome], summaries: list[IngestSummary], out_fmt: OutputFormat
) -> None:
    """Each failed file's cause and each load's warnings on stderr, the loads on stdout; exit
    with the worst failed file's code."""
    failed = [o for o in outcomes if not o.ok]
    for o in failed:  # one line per failed file, so a batch's log shows each cause
        sys.stderr.write(f"Error: {' '.join(str(o.error).split())}\n")
    for s in summaries:
        for w in s.warnings:
            stderr.print(f"warning: {s.source}: {w}", highlight=False, markup=False)
        if s.disabled_analyses:
            stderr.print(
                terminal_text(
                    f"note: {s.source}: missing {', '.join(s.missing_fields)}; "
                    "disabled: " + "; ".join(s.disabled_analyses)
                ),
                highlight=False,
            )
    if out_fmt is OutputFormat.json:
        emit_rows([_outcome_row(o) for o in outcomes], out_fmt)
    else:
        rows = [
            {
                **s.__dict__,
                "rows_per_s": s.rows_read / s.seconds if s.seconds else None,
                "first_reasons": " | ".join(s.first_reasons[:3]),
            }
            for s in summaries
        ]
        emit_rows(rows, out_fmt, columns=_SUMMARY_COLUMNS, title="ingest")
    if failed:
        raise typer.Exit(max(o.exit_code for o in failed))


def _outcome_row(outcome: FileOutcome) -> dict[str, object]:
    """One file's entry of ``--format json``: its summary and ``status`` 'done', or its source,
    ``status`` 'failed' and the error."""
    if outcome.summary is not None:
        return {**dataclasses.asdict(outcome.summary), "status": "done", "error": None}
    return {"source": outcome.source, "status": "failed", "error": outcome.error}


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.command("ingest")(ingest_cmd)
