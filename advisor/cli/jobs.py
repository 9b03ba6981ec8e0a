"""`advisor jobs`: the loaded allocation rows, filtered."""

from __future__ import annotations

from typing import Annotated

import typer

from advisor.cli._output import DbOption, FormatOption, OutputFormat, emit_rows
from advisor.cli._parse import utc_time


def jobs_cmd(
    cluster: Annotated[
        str | None, typer.Option("--cluster", metavar="NAME", help="Only this cluster.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="TIME", help="Submitted at or after (ISO 8601, UTC)."),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", metavar="TIME", help="Submitted before (ISO 8601, UTC)."),
    ] = None,
    state: Annotated[
        str | None, typer.Option("--state", metavar="STATE", help="COMPLETED, FAILED, ...")
    ] = None,
    gpu_type: Annotated[
        str | None,
        typer.Option(
            "--gpu-type", metavar="TYPE", help="Canonical (H100) or site name (h100_80gb)."
        ),
    ] = None,
    account: Annotated[
        str | None, typer.Option("--account", metavar="NAME", help="Only this account.")
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", metavar="NAME", help="Only this user.")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", metavar="N", help="At most this many rows (0: all).")
    ] = 1000,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """List the loaded allocation rows (one per job, array task or het component)."""
    from advisor.ingest import JobFilter, list_jobs
    from advisor.store import connect

    flt = JobFilter(
        cluster=cluster,
        since=utc_time(since, "--since"),
        until=utc_time(until, "--until"),
        state=state,
        gpu_type=gpu_type,
        account=account,
        user=user,
        limit=None if limit == 0 else limit,
    )
    con = connect(db, read_only=True)
    try:
        rows = list_jobs(con, flt)
    finally:
        con.close()
    from advisor.ingest.records import JOB_COLUMNS

    emit_rows(rows, fmt, columns=JOB_COLUMNS, title="jobs")


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.command("jobs")(jobs_cmd)
