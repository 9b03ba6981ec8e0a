"""`advisor dashboard`: serve the Streamlit dashboard over the database."""

from __future__ import annotations

from typing import Annotated

import typer

from advisor.cli._output import DbOption


def dashboard_cmd(
    db: DbOption = None,
    port: Annotated[
        int, typer.Option("--port", metavar="PORT", help="Port to serve on (localhost).")
    ] = 8501,
    address: Annotated[
        str,
        typer.Option(
            "--address", metavar="HOST", help="Address to listen on (0.0.0.0 for every interface)."
        ),
    ] = "localhost",
    hash_users: Annotated[
        bool,
        typer.Option("--hash-users", help="Show user and account names as stable pseudonyms."),
    ] = False,
) -> None:
    """Serve the dashboard over the database (read-only) until interrupted."""
    from advisor.datainfo import DashboardConfig, run_dashboard
    from advisor.derived import store_fresh
    from advisor.store import resolve_db_path

    code = run_dashboard(
        DashboardConfig(
            db_path=resolve_db_path(db), port=port, address=address, hash_users=hash_users
        ),
        before_serving=store_fresh,
    )
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.command("dashboard")(dashboard_cmd)
