"""`advisor data status`: what is loaded (freshness per cluster, GPU types, the ingest log,
rejected records by reason)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from advisor.cli._output import DbOption, FormatOption, OutputFormat, emit_json, emit_rows

data_app = typer.Typer(
    help="What is loaded: freshness, GPU types, ingests, rejects.", no_args_is_help=True
)


@data_app.command("status")
def status_cmd(
    db: DbOption = None,
    fmt: FormatOption = OutputFormat.table,
    limit: Annotated[
        int, typer.Option("--limit", metavar="N", help="Ingests and reject reasons listed.")
    ] = 20,
) -> None:
    """Freshness per cluster, GPU types (unrecognised ones named), ingests and reject reasons.

    ``--format json`` prints the whole status as one object; table and csv print one row per
    cluster.
    """
    from advisor.datainfo import status_of_db

    status = status_of_db(db, limit)
    for cluster, asking in status.gpus_unrecorded:  # a diagnostic: stderr, in every format
        sys.stderr.write(
            f"warning: cluster {cluster}: no AllocTRES records gres/gpu while {asking} jobs"
            " asked for GPUs: the accounting database does not record GPUs (AccountingStorageTRES"
            " lacks gres/gpu), so GPU jobs are stored with 0 GPUs\n"
        )
    if fmt is OutputFormat.json:
        emit_json(status)
        return
    emit_rows(status.clusters, fmt, title="Data freshness (UTC)")
    if fmt is OutputFormat.table and status.usage:
        emit_rows(status.usage, fmt, title="Usage data: what GPU jobs used (advisor usage)")


def register(app: typer.Typer) -> None:
    """Add this command group to the app."""
    app.add_typer(data_app, name="data")
