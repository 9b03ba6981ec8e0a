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
