"""The DuckDB store: where the database lives, connecting, the schema and its migrations,
and the loader for the SQL kept under ``advisor/sql/``.

All SQL of the project lives in ``advisor/sql/``: numbered migrations in ``migrations/``
(``NNN_name.sql``, numbered 1, 2, 3 ... in one line and applied strictly in that order, each
once, recorded in ``schema_version``; base data only, derived tables are built by their own
module) and named
queries in ``<domain>/<name>.sql``, loaded with :func:`query`. Values are always bound as
parameters; identifiers that vary go through :func:`quote_ident`.

Every TIMESTAMP column holds UTC.
"""

from __future__ import annotations

import logging
import os
import re
import time
from functools import cache
from importlib import resources
from pathlib import Path

import duckdb

from advisor.dbpath import DB_ENV as DB_ENV  # re-exported: their home is duckdb-free
from advisor.dbpath import DEFAULT_DB as DEFAULT_DB
from advisor.dbpath import resolve_db_path as resolve_db_path
from advisor.errors import LockedError, NotFoundError, StoreError, UnreadableStoreError

# The storage format of a database file this code creates (an existing file keeps its own):
# v1.3.0 brings DICT_FSST string compression, which makes writing the jobs table cheaper
# (docs/ingest.md, "Speed"); DuckDB before 1.3 cannot open such a file, hence the duckdb>=1.3 pin.
STORAGE_VERSION = "v1.3.0"

_MIGRATION_RE = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")

# How long an open waits for another process's lock on the file (a dashboard request, a
# running ingest) before giving up with LockedError; the environment variable overrides it.
LOCK_WAIT_ENV = "ADVISOR_LOCK_WAIT_S"
DEFAULT_LOCK_WAIT_S = 30.0
_LOCK_RETRY_S = 0.1
# DuckDB's message for a file locked by another process names its program and PID.
_LOCK_HOLDER_RE = re.compile(r"Conflicting lock is held in (.*?) \(PID (\d+)\)")

log = logging.getLogger(__name__)


def _sql_root() -> resources.abc.Traversable:
    return resources.files("advisor").joinpath("sql")


@cache
def query(name: str) -> str:
    """The text of the named query ``advisor/sql/<name>.sql`` (e.g. ``"ratios/summary"``)."""
    path = _sql_root().joinpath(*f"{name}.sql".split("/"))
    if not path.is_file():
        raise NotFoundError(f"no SQL query named {name!r} under advisor/sql/")
    return path.read_text(encoding="utf-8")


# A placeholder, or a line comment (matched first so that a comment naming a placeholder,
# as a header may, is left as it is).
_PLACEHOLDER_RE = re.compile(r"--[^\n]*|\{\{(\w+)\}\}")


def placeholders(sql: str) -> set[str]:
    """The ``{{name}}`` placeholders of a statement's text, outside its ``--`` comments."""
    return {m.group(1) for m in _PLACEHOLDER_RE.finditer(sql) if m.group(1)}


def render(name: str, /, **parts: str) -> str:
    """The named statement with each ``{{part}}`` replaced by the SQL text given for it.

    Parts are pieces of SQL chosen by the code (a column list, a sub-query), never values:
    values are bound as parameters. Every placeholder must be given and every part given must
    be used, so a renamed placeholder fails here instead of reaching DuckDB as ``{{...}}``.
    """
    sql = query(name)
    wanted = placeholders(sql)
    missing = sorted(wanted - parts.keys())
    unused = sorted(parts.keys() - wanted)
    if missing or unused:
        raise StoreError(
            f"advisor/sql/{name}.sql: placeholders not filled: {missing or 'none'}; "
            f"parts that fill nothing: {unused or 'none'}"
        )
    return _PLACEHOLDER_RE.sub(lambda m: parts[m.group(1)] if m.group(1) else m.group(0), sql)


def migrations() -> list[tuple[int, str, str]]:
    """(version, file name, SQL) of every migration, in order: versions 1, 2, 3 ... in one line."""
    found = []
    for entry in _sql_root().joinpath("migrations").iterdir():
        m = _MIGRATION_RE.match(entry.name)
        if m:
            found.append((int(m.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise StoreError(f"migrations are not numbered 1, 2, 3 ... in one line: {versions}")
    return found


RENUMBERED: dict[str, int] = {
    "010_ingest_windows.sql": 2,
    "011_jobs_key_unenforced.sql": 3,
    "020_nodes_cpus_effective.sql": 4,
    "026_ratio_fair_share.sql": 5,
    "031_bench_runs_where.sql": 6,
    "032_jobs_usage.sql": 7,
}
"""The migrations of a file written before they were numbered in one line: by the name it
recorded, each one's version now."""

# an old file's highest version, read as today's (its cube migrations 021-028 add no base data)
_OLD_NUMBERS: dict[int, int] = {
    **{1: 1, 10: 2, 11: 3, 20: 4, 26: 5, 31: 6, 32: 7},
    **dict.fromkeys((21, 22, 23, 24, 25), 4),
    **dict.fromkeys((27, 28), 5),
}


def renumbered(version: int) -> int:
    """Today's number of a schema version that an older advisor recorded elsewhere (an
    exported dataset's metadata), where it is above every version of today's line."""
    return _OLD_NUMBERS.get(version, version) if version > len(migrations()) else version


DERIVED: frozenset[str] = frozenset(
    {
        "021_ratio_cube.sql",
        "022_ratio_cube_people.sql",
        "023_ratio_cube_rules.sql",
        "024_ratio_people_months.sql",
        "025_ratio_people_months_lazy.sql",
        "027_ratio_people_ids.sql",
        "028_ratio_people_month_ratios.sql",
    }
)
"""Migrations of such a file that made derived tables: no longer migrations (the ratio cubes
own their schema and drop these tables when they find them; see advisor.derived.cube)."""


def _applied(con: duckdb.DuckDBPyConnection) -> list[tuple[int, str]]:
    """(version, name) of each migration recorded in the file, old numbers read as today's."""
    if not _has_schema_version(con):
        return []
    rows = con.execute("SELECT version, name FROM schema_version ORDER BY version").fetchall()
    return sorted(
        (RENUMBERED.get(name, int(version)), str(name))
        for version, name in rows
        if name not in DERIVED
    )


def _has_schema_version(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
    ).fetchone()
    return bool(row and row[0])


def _check_history(applied: list[tuple[int, str]]) -> int:
    """The newest version applied; a gap below it (a migration recorded out of order, or a
    file changed by hand) is an error, since migrations apply strictly in order."""
    versions = [v for v, _ in applied]
    if versions and versions != list(range(1, len(versions) + 1)):
        missing = sorted(set(range(1, max(versions) + 1)) - set(versions))
        raise StoreError(
            f"schema_version records migrations {versions}: {missing} missing below "
            f"{max(versions)}, so this file's schema is unknown; rebuild it with `advisor ingest`"
        )
    return max(versions, default=0)


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The highest migration applied to this database (0 for a new one)."""
    return max((v for v, _ in _applied(con)), default=0)


def pending(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The migrations not applied to this database yet: those above its newest, in order (a
    file written before the one-line numbering is read by :data:`RENUMBERED`)."""
    newest = _check_history(_applied(con))
    return [v for v, _, _ in migrations() if v > newest]


def _renumber(con: duckdb.DuckDBPyConnection) -> None:
    """Record a file's migrations under today's numbers and forget the derived ones, once."""
    rows = con.execute("SELECT version, name, applied_at FROM schema_version").fetchall()
    old = [r for r in rows if r[1] in RENUMBERED or r[1] in DERIVED]
    if not old:
        return
    names = {v: name for v, name, _ in migrations()}
    con.execute("BEGIN TRANSACTION")
    try:
        for version, name, applied_at in old:
            con.execute("DELETE FROM schema_version WHERE version = ?", [version])
            if name in RENUMBERED:
                new = RENUMBERED[name]
                con.execute(
                    "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
                    [new, names[new], applied_at],
                )
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply every migration not yet applied, in order, each in its own transaction; return
    those applied."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
        " applied_at TIMESTAMP NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'))"
    )
    _renumber(con)
    done = []
    for version in pending(con):
        _, name, sql = migrations()[version - 1]
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
    migrate_schema: bool = True,
    wait_s: float | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open the database (see :func:`resolve_db_path`), creating and migrating it if writable.

    Read-only connections never change the file: a missing file is an error, and a database
    older than this code is reported with the command that upgrades it. So is a writable one
    with ``migrate_schema=False`` (a caller that only refreshes derived tables).

    When another process holds the file (DuckDB allows one writer, or any number of readers),
    the open is retried for up to ``wait_s`` seconds (None: ``$ADVISOR_LOCK_WAIT_S``, else 30),
    saying once on stderr (logging) which process holds it; :class:`LockedError` after that.
    """
    path = resolve_db_path(db)
    wait = lock_wait_s() if wait_s is None else wait_s
    if read_only:
        if not path.exists():
            raise NotFoundError(
                f"{path}: no such database; load data first with `advisor ingest FILE --db {path}`"
            )
        con = _open_waiting(path, read_only=True, wait_s=wait)
    else:
        if path.parent and not path.parent.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
        con = _open_waiting(path, read_only=False, wait_s=wait)
        if migrate_schema:
            migrate(con)
            return con
    have, missing = schema_version(con), pending(con)
    if missing:
        con.close()
        raise StoreError(
            f"{path}: schema version {have} lacks migrations {missing} of this advisor; "
            f"run `advisor db migrate --db {path}` once"
        )
    return con


def lock_wait_s() -> float:
    """Seconds an open waits for another process's lock (``$ADVISOR_LOCK_WAIT_S``, else 30)."""
    raw = os.environ.get(LOCK_WAIT_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_LOCK_WAIT_S
    except ValueError:
        raise StoreError(f"{LOCK_WAIT_ENV}={raw!r} is not a number of seconds") from None
    return max(0.0, value)


def lock_holder(message: str) -> str | None:
    """The holder ("PID n (its command line)") named in DuckDB's lock-conflict message, or None
    for any other error."""
    m = _LOCK_HOLDER_RE.search(message)
    if m is None:
        return None
    pid, program = m.group(2), m.group(1)
    try:  # the command line says more than the interpreter's path ("advisor ingest ...")
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        words = [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w]
        if words:
            program = " ".join(Path(words[0]).name if i == 0 else w for i, w in enumerate(words))
    except OSError:
        pass
    # one line of printable text: a command line may hold newlines or terminal escapes
    program = "".join(ch if ch.isprintable() else "?" for ch in " ".join(program.split()))
    if len(program) > 120:
        program = program[:117] + "..."
    return f"PID {pid} ({program})"


def writer_waiting_path(db: str | os.PathLike[str]) -> Path:
    """The marker a writer leaves next to the database file while it waits for the lock."""
    path = Path(db)
    return path.with_name(path.name + ".writer-waiting")


def writer_waiting(db: str | os.PathLike[str]) -> bool:
    """Whether a live process is waiting to write the database file (see :func:`connect`):
    long-lived readers (the dashboard) then let go of the file as soon as they can."""
    marker = writer_waiting_path(db)
    try:
        pid = int(marker.read_text(encoding="ascii").strip() or "0")
    except (OSError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # signal 0: is it alive (a writer killed while waiting leaves its marker)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


def _open_waiting(path: Path, *, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    """Open ``path``, retrying while another process holds a conflicting lock on it. A waiting
    writer leaves :func:`writer_waiting_path` (its PID) for the time it waits."""
    deadline = time.monotonic() + wait_s
    told = False
    marker: Path | None = None
    try:
        while True:
            try:
                if read_only:
                    return duckdb.connect(str(path), read_only=True)
                return _open_writable(path)
            except duckdb.Error as exc:
                holder = lock_holder(str(exc))
                how = "read-only" if read_only else "for writing"
                if holder is None:
                    raise UnreadableStoreError(f"{path}: cannot open {how}: {exc}") from exc
                if time.monotonic() >= deadline:
                    raise LockedError(
                        f"{path}: database is in use by {holder}; still locked after {wait_s:g} "
                        f"s. Try again when it has finished (or set {LOCK_WAIT_ENV} to wait "
                        "longer)"
                    ) from exc
                if not told and wait_s > 0:
                    log.warning(
                        "%s: database is in use by %s; waiting up to %g s", path, holder, wait_s
                    )
                    told = True
                    if not read_only:
                        marker = _leave_marker(path)
            time.sleep(min(_LOCK_RETRY_S, max(0.0, deadline - time.monotonic())))
    finally:
        if marker is not None:
            marker.unlink(missing_ok=True)


def _leave_marker(path: Path) -> Path | None:
    marker = writer_waiting_path(path)
    try:
        marker.write_text(f"{os.getpid()}\n", encoding="ascii")
    except OSError:  # a directory we cannot write: readers then just let go when idle
        return None
    return marker


def _open_writable(path: Path) -> duckdb.DuckDBPyConnection:
    """A read-write connection; a new file is created in :data:`STORAGE_VERSION`."""
    return duckdb.connect(str(path), config={"storage_compatibility_version": STORAGE_VERSION})


def quote_ident(name: str) -> str:
    """Quote a SQL identifier (a column or table name that varies) for DuckDB."""
    return '"' + name.replace('"', '""') + '"'


def migrate_db(db: str | os.PathLike[str] | None = None) -> list[int]:
    """Open (creating) the database and apply pending migrations; return the versions applied."""
    path = resolve_db_path(db)
    con = _open_waiting(path, read_only=False, wait_s=lock_wait_s())
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
