"""``advisor db``: the database file itself (where it is, its schema version, migrating it,
rebuilding its derived tables)."""

from __future__ import annotations

import typer

from advisor.cli._output import DbOption, FormatOption, OutputFormat, emit_rows

db_app = typer.Typer(
    help="The DuckDB file: location, schema version, migration, derived tables.",
    no_args_is_help=True,
)


@db_app.command("migrate")
def migrate_cmd(db: DbOption = None, fmt: FormatOption = OutputFormat.table) -> None:
    """Create the database if needed and apply every pending schema migration."""
    from advisor.store import db_info, migrate_db

    applied = migrate_db(db)
    info = db_info(db)
    emit_rows([{**info, "applied_now": applied}], fmt)


@db_app.command("info")
def info_cmd(db: DbOption = None, fmt: FormatOption = OutputFormat.table) -> None:
    """Where the database is, its schema version and the row count of each table."""
    from advisor.store import db_info

    emit_rows([db_info(db)], fmt)


@db_app.command("refresh")
def refresh_cmd(db: DbOption = None, fmt: FormatOption = OutputFormat.table) -> None:
    """Rebuild the tables derived from the jobs (the ratio summaries), fresh or not."""
    from advisor.derived import refresh_derived

    emit_rows([refresh_derived(db)], fmt)


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
