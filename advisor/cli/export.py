"""``advisor export parquet DIR``: the database as a Hive-partitioned Parquet dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli._output import DbOption, FormatOption, OutputFormat, RichProgress, emit_rows

export_app = typer.Typer(
    help="Write the database in formats other engines read.", no_args_is_help=True
)

ParquetOption = Annotated[
    str | None,
    typer.Option(
        "--parquet",
        help="Read a Parquet dataset (a folder `advisor export parquet` wrote, or an "
        "object-store URL such as s3://bucket/advisor) instead of the DuckDB file.",
    ),
]


@export_app.command("parquet")
def parquet_cmd(
    out: Annotated[
        Path,
        # described in the docstring: typer 0.29 prints an argument's Python type in help
        typer.Argument(metavar="DIR", hidden=True, show_default=False),
    ],
    summary: Annotated[
        bool, typer.Option(help="Also write the derived ratios summary (ratios/).")
    ] = True,
    db: DbOption = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Write jobs (cluster=/month= partitions), nodes and the ratios summary as Parquet, with
    the schema version in each file's metadata. Several centres can export into one folder.

    DIR is the dataset's folder (created if missing; one shared by several centres is fine).
    """
    from advisor.export import ExportConfig, export_parquet

    with RichProgress() as progress:
        tables = export_parquet(ExportConfig(out_dir=out, db=db, summary=summary), progress)
    emit_rows(tables, fmt, title="Parquet dataset written")


def register(app: typer.Typer) -> None:
    """Add this domain's commands to the app."""
    app.add_typer(export_app, name="export")
