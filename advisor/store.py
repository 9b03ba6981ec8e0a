"""The DuckDB store: where the database lives, connecting, the schema and its migrations,
and the loader for the SQL kept under ``advisor/sql/``.

All SQL of the project lives in ``advisor/sql/``: numbered migrations in ``migrations/``
(``NNN_name.sql``, applied in order, each once, recorded in ``schema_version``) and named
queries in ``<domain>/<name>.sql``, loaded with :func:`query`. Values are always bound as
parameters; identifiers that vary go through :func:`quote_ident`.

Every TIMESTAMP column holds UTC.
"""

from __future__ import annotations

import os
import re
from functools import cache
from importlib import resources
from pathlib import Path

import duckdb

from advisor.errors import NotFoundError, StoreError

DEFAULT_DB = "advisor.duckdb"
DB_ENV = "ADVISOR_DB"
# The storage format of a database file this code creates (an existing file keeps its own).
# v1.3.0 brings DICT_FSST string compression: writing the 4.65M-row jobs table takes about
# 9 CPU-s instead of about 13, in a file of the same size (bench/bench_ingest.py); DuckDB
# before 1.3 cannot open such a file, hence the duckdb>=1.3 pin.
STORAGE_VERSION = "v1.3.0"

_MIGRATION_RE = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


def resolve_db_path(db: str | os.PathLike[str] | None = None) -> Path:
    """The database file: ``db`` if given, else ``$ADVISOR_DB``, else ``./advisor.duckdb``."""
    if db is not None and str(db) != "":
        return Path(db)
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env)
    return Path(DEFAULT_DB)


def _sql_root() -> resources.abc.Traversable:
    return resources.files("advisor").joinpath("sql")


@cache
def query(name: str) -> str:
    """The text of the named query ``advisor/sql/<name>.sql`` (e.g. ``"ratios/summary"``)."""
    path = _sql_root().joinpath(*f"{name}.sql".split("/"))
    if not path.is_file():
        raise NotFoundError(f"no SQL query named {name!r} under advisor/sql/")
    return path.read_text(encoding="utf-8")


def migrations() -> list[tuple[int, str, str]]:
    """(version, file name, SQL) of every migration, in order."""
    found = []
    for entry in _sql_root().joinpath("migrations").iterdir():
        m = _MIGRATION_RE.match(entry.name)
        if m:
            found.append((int(m.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise StoreError(f"two migrations share a version number: {versions}")
    return found


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The highest migration applied to this database (0 for a new one)."""
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
    ).fetchone()
    if not exists or exists[0] == 0:
        return 0
    row = con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def pending(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The migrations not applied to this database yet (a number below the highest applied one
    can be new too)."""
    applied = {0}
    if schema_version(con):
        applied |= {int(r[0]) for r in con.execute("SELECT version FROM schema_version").fetchall()}
    return [v for v, _, _ in migrations() if v not in applied]


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply every migration not yet applied, each in its own transaction; return those applied."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
        " applied_at TIMESTAMP NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'))"
    )
    applied = {r[0] for r in con.execute("SELECT version FROM schema_version").fetchall()}
    done = []
    for version, name, sql in migrations():
        if version in applied:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(sql)
            con.execute("INSERT INTO schema_version (version, name) VALUES (?, ?)", [version, name])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        done.append(version)
    return done


def connect(
    db: str | os.PathLike[str] | None = None,
    *,
    read_only: bool = False,
) -> duckdb.DuckDBPyConnection:
    """Open the database (see :func:`resolve_db_path`), creating and migrating it if writable.

    Read-only connections never change the file: a missing file is an error, and a database
    older than this code is reported with the command that upgrades it.
    """
    path = resolve_db_path(db)
    if read_only:
        if not path.exists():
            raise NotFoundError(
                f"{path}: no such database; load data first with `advisor ingest FILE --db {path}`"
            )
        try:
            con = duckdb.connect(str(path), read_only=True)
        except duckdb.Error as exc:
            raise StoreError(f"{path}: cannot open read-only: {exc}") from exc
        have, missing = schema_version(con), pending(con)
        if missing:
            con.close()
            raise StoreError(
                f"{path}: schema version {have} lacks migrations {missing} of this advisor; "
                f"run `advisor db migrate --db {path}` once"
            )
        return con
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = _open_writable(path)
    except duckdb.Error as exc:
        raise StoreError(f"{path}: cannot open: {exc}") from exc
    migrate(con)
    return con


def _open_writable(path: Path) -> duckdb.DuckDBPyConnection:
    """A read-write connection; a new file is created in :data:`STORAGE_VERSION`."""
    return duckdb.connect(str(path), config={"storage_compatibility_version": STORAGE_VERSION})


def quote_ident(name: str) -> str:
    """Quote a SQL identifier (a column or table name that varies) for DuckDB."""
    return '"' + name.replace('"', '""') + '"'


def migrate_db(db: str | os.PathLike[str] | None = None) -> list[int]:
    """Open (creating) the database and apply pending migrations; return the versions applied."""
    path = resolve_db_path(db)
    con = _open_writable(path)
    try:
        return migrate(con)
    finally:
        con.close()


def db_info(db: str | os.PathLike[str] | None = None) -> dict[str, object]:
    """Path, schema version and row counts of the main tables."""
    path = resolve_db_path(db)
    con = connect(path, read_only=True)
    try:
        counts: dict[str, object] = {"path": str(path), "schema_version": schema_version(con)}
        names = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'main' ORDER BY table_name"
            ).fetchall()
        ]
        for name in names:
            if name == "schema_version":
                continue
            row = con.execute(f"SELECT count(*) FROM {quote_ident(name)}").fetchone()  # noqa: S608
            counts[name] = int(row[0]) if row else 0
        return counts
    finally:
        con.close()
