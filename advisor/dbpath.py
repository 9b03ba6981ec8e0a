"""Where the database file is, without importing DuckDB: the job-submit path asks this before
it knows whether there is a database to open at all."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DB = "advisor.duckdb"
DB_ENV = "ADVISOR_DB"


def resolve_db_path(db: str | os.PathLike[str] | None = None) -> Path:
    """The database file: ``db`` if given, else ``$ADVISOR_DB``, else ``./advisor.duckdb``."""
    if db is not None and str(db) != "":
        return Path(db)
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env)
    return Path(DEFAULT_DB)


def missing_named_db(db: str | os.PathLike[str] | None = None) -> Path | None:
    """The database file named by ``db`` or ``$ADVISOR_DB`` when it does not exist, else None.

    The default ``./advisor.duckdb`` is only looked for: its absence means no database was
    meant, where a named file that is not there is most likely a typo worth saying.
    """
    named = db if db is not None and str(db) != "" else os.environ.get(DB_ENV)
    if not named:
        return None
    path = Path(named)
    return None if path.exists() else path
