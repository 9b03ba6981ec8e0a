"""The derived tables of ``jobs`` (the ratio cube, the people cubes, ``job_mix_months``,
``usage_months``, ``usage_people_months``, ``usage_starved_months``): their schema, rules
version, freshness and rebuild, and the job mix reader.

The cubes are pre-aggregated copies of ``jobs`` that answer most ratio queries in
milliseconds. They are derived data: never migrated, dropped and recreated from
``advisor/sql/ratios/cube_schema.sql`` when :data:`CUBE_RULES_VERSION` changes, and rebuilt
from ``jobs`` whenever the fingerprint of the jobs they were built from no longer matches.
A rebuild replaces only the slices (cluster, month) whose jobs changed since the last one
(``derived_slices`` holds each slice's job count and row checksum), so a load of one month
into years of jobs costs that month, whatever wrote the rows.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import duckdb

from advisor.derived.usage_months import refresh_usage_months
from advisor.errors import StoreError
from advisor.store import query, render

CUBE_RULES_VERSION = 12
"""Bumped whenever the rules or the schema the cubes are built with change: the derived tables
are then dropped and recreated (:func:`ensure_cube_schema`) and read stale until rebuilt."""

_CUBE_TABLES: tuple[str, ...] = (
    "ratio_cube",
    "ratio_people",
    "ratio_cube_people",
    "ratio_cube_people_months",
    "ratio_cube_people_month_ratios",
    "job_mix_months",
    "usage_months",
    "usage_people_months",
    "usage_starved_months",
    "derived_slices",
    "ratio_cube_people_months_state",
    "ratio_cube_state",
)
"""The derived tables a cube rebuild replaces (the state last). The per-month people cube is
only emptied: it is built on first use (:func:`refresh_people_months`)."""

_MONTHS_TABLES: tuple[str, ...] = (
    "ratio_cube_people_months",
    "ratio_cube_people_month_ratios",
    "ratio_cube_people_months_state",
)

_SLICED_TABLES: tuple[str, ...] = (
    "ratio_cube",
    "job_mix_months",
    "usage_months",
    "usage_people_months",
    "usage_starved_months",
    "derived_slices",
)
"""The derived tables filed by (cluster, month): a slice rebuild empties and refills their
changed slices; the people cubes (no month) are regrouped from every job."""

WHOLE_SHARE = 0.5
"""A rebuild whose changed slices hold more than this share of the jobs rebuilds everything:
emptying whole tables is cheaper than deleting most of their rows slice by slice."""


@dataclass(frozen=True)
class CubeRebuild:
    """What one rebuild of the derived tables did: ``whole`` (every slice, the people cubes
    renumbered) or only ``slices_rebuilt`` of ``slices_total`` slices (cluster, month);
    ``jobs_in_rebuilt_slices`` jobs were read again; whether the per-month people cube was kept
    fresh slice by slice (``people_months_kept``: the people numbering did not change and it was
    fresh before); ``ratio_cube_rows`` after it."""

    whole: bool
    slices_rebuilt: int
    slices_total: int
    jobs_in_rebuilt_slices: int
    people_months_kept: bool
    ratio_cube_rows: int


_SCHEMA_TABLE = "ratio_cube_schema"

_RETIRED_TABLES: tuple[str, ...] = ()
"""Derived tables of earlier rules versions that no version creates any more (dropped too)."""


T = TypeVar("T")

_READ: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, Any]] = (
    weakref.WeakKeyDictionary()
)
"""Per read-only connection, what this module has read about its derived tables. It cannot
change while the connection is open (no process writes a file that a reader holds) except
through the TEMP copies this module makes on that connection, which forget it
(:func:`_forget`); every dashboard page asks several times per interaction."""


def _remembered(con: duckdb.DuckDBPyConnection, key: str, read: Callable[[], T]) -> T:
    """``read()``, once per read-only connection and ``key``; every time on a writable one."""
    known = _READ.get(con)
    if known is None:
        if not is_read_only(con):
            return read()
        known = _READ.setdefault(con, {})
    if key not in known:
        known[key] = read()
    return known[key]


def _forget(con: duckdb.DuckDBPyConnection) -> None:
    _READ.pop(con, None)


def _stored_rules_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The rules version the derived tables visible to ``con`` were created under (a TEMP copy
    shadows the stored one), None when they were never created by this module."""
    return _remembered(con, "rules_version", lambda: _read_rules_version(con))


def _read_rules_version(con: duckdb.DuckDBPyConnection) -> int | None:
    row = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [_SCHEMA_TABLE]
    ).fetchone()
    if not row or not row[0]:
        return None
    got = con.execute(query("ratios/state/rules_version")).fetchone()
    return None if got is None or got[0] is None else int(got[0])


def _create(con: duckdb.DuckDBPyConnection, tables: Sequence[str], *, temporary: bool) -> None:
    """Create ``tables`` (the version table too) from advisor/sql/ratios/cube/, empty; TEMP ones
    shadow the stored ones for this connection only."""
    _forget(con)
    create = "CREATE OR REPLACE TEMP TABLE" if temporary else "CREATE TABLE"
    for table in (*tables, _SCHEMA_TABLE):
        con.execute(render(f"ratios/cube/{table}", create=create))
    con.execute(query("ratios/state/set_rules_version"), {"rules_version": CUBE_RULES_VERSION})


def ensure_cube_schema(con: duckdb.DuckDBPyConnection, *, in_transaction: bool = False) -> bool:
    """Make the stored derived tables those of :data:`CUBE_RULES_VERSION`: when the file holds
    none, or another version's (the tables an older advisor made, migrations included), drop
    them all and create them empty, so that they read stale until rebuilt. Returns whether the
    stored tables are now of this version (never on a read-only connection that found others).
    ``in_transaction`` as in :func:`refresh_ratio_cube`."""
    if _stored_rules_version(con) == CUBE_RULES_VERSION:
        return True
    if is_read_only(con):
        return False
    if not in_transaction:
        con.execute("BEGIN TRANSACTION")
    try:
        for table in (*_CUBE_TABLES, *_RETIRED_TABLES, _SCHEMA_TABLE):
            con.execute(f"DROP TABLE IF EXISTS main.{table}")
        _create(con, _CUBE_TABLES, temporary=False)
        if not in_transaction:
            con.execute("COMMIT")
    except Exception:
        if not in_transaction:
            con.execute("ROLLBACK")
        raise
    return True


def _fingerprint(con: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    def read() -> tuple[Any, ...]:
        row = con.execute(query("ratios/cube_fingerprint")).fetchone()
        assert row is not None
        return (int(row[0]), int(row[1]), row[2], CUBE_RULES_VERSION)

    return _remembered(con, "fingerprint", read)


def _cube_state(con: duckdb.DuckDBPyConnection, table: str = "ratio_cube_state") -> Any:
    if _stored_rules_version(con) != CUBE_RULES_VERSION:
        return None  # no derived tables, or another version's: stale

    def read() -> Any:
        row = con.execute(render("ratios/state/read", table=table)).fetchone()
        return None if row is None else (int(row[0]), int(row[1]), row[2], int(row[3] or 0))

    return _remembered(con, table, read)


def cube_is_fresh(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``ratio_cube`` was built from the jobs as they are now (see refresh_ratio_cube)."""
    return _cube_state(con) == _fingerprint(con)


def people_months_are_fresh(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``ratio_cube_people_months`` was built from the jobs as they are now, on the
    current ``ratio_people`` (see :func:`refresh_people_months`)."""
    fp = _fingerprint(con)
    return _cube_state(con) == fp and _cube_state(con, "ratio_cube_people_months_state") == fp


_READ_ONLY: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, bool] = weakref.WeakKeyDictionary()


def is_read_only(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` was opened read-only (asked once per connection: it cannot change)."""
    if con not in _READ_ONLY:
        row = con.execute("SELECT current_setting('access_mode')").fetchone()
        _READ_ONLY[con] = row is not None and str(row[0]) == "read_only"
    return _READ_ONLY[con]


def _write_state(con: duckdb.DuckDBPyConnection, table: str, fp: tuple[Any, ...]) -> None:
    _forget(con)
    names = ("jobs_rows", "ingest_id", "finished_at", "rules_version")
    con.execute(render("ratios/state/write", table=table), dict(zip(names, fp, strict=True)))


def _temp_copies(con: duckdb.DuckDBPyConnection, tables: Sequence[str]) -> None:
    """Empty TEMP copies of ``tables`` that shadow the stored ones for this connection."""
    _create(con, tables, temporary=True)


def refresh_ratio_cube(
    con: duckdb.DuckDBPyConnection, *, temporary: bool = False, in_transaction: bool = False
) -> int:
    """Bring the ratio cubes (``ratio_cube``, and ``ratio_people``, ``ratio_cube_people`` for
    accounts and users), ``job_mix_months`` and ``usage_months`` up to date with ``jobs`` in one
    transaction; return the row count of ``ratio_cube``. See :func:`rebuild_cubes`."""
    return rebuild_cubes(con, temporary=temporary, in_transaction=in_transaction).ratio_cube_rows


def rebuild_cubes(
    con: duckdb.DuckDBPyConnection,
    *,
    temporary: bool = False,
    in_transaction: bool = False,
    whole: bool = False,
) -> CubeRebuild:
    """Rebuild the derived tables from ``jobs`` where they changed, in one transaction.

    Only the slices (cluster, month) whose job count or row checksum differ from
    ``derived_slices`` are emptied and built again from their jobs. The per-month people cube
    is built on first use (:func:`refresh_people_months`); when it was fresh, the all-time
    people cube follows by difference (what the changed slices hold now, less what they held)
    and the per-month cube is kept fresh slice by slice, as long as nobody came or went (the
    people's numbers then hold). Else the all-time people cubes are regrouped from every job
    in one pass, and the per-month cube is emptied and left stale. A first build, a
    TEMP build, ``whole=True``, or changed slices holding most of the jobs rebuild everything.

    Ingest's callers call this after a load has committed (it is also rebuilt on demand by the
    first summary on a writable connection that finds it stale). ``in_transaction=True`` when
    the caller has a transaction open: the rebuild then joins it instead of opening its own.
    ``temporary`` builds a TEMP copy that shadows the stored one for this connection only: what
    a long-lived read-only connection (the dashboard) uses, see :func:`ensure_ratio_cube`.
    """
    fp = _fingerprint(con)
    if temporary:
        _temp_copies(con, _CUBE_TABLES)
    else:
        ensure_cube_schema(con, in_transaction=in_transaction)
    built = None if temporary else _cube_state(con)
    # the per-month people cube was built from the same jobs as the other cubes
    months_were_fresh = built is not None and _cube_state(con, _MONTHS_TABLES[-1]) == built
    whole = whole or built is None
    own = not in_transaction
    if own:
        con.execute("BEGIN TRANSACTION")
    try:
        done = _rebuild(con, whole=whole, months_were_fresh=months_were_fresh)
        _write_state(con, "ratio_cube_state", fp)
        if done.people_months_kept:
            _write_state(con, "ratio_cube_people_months_state", fp)
        if own:
            con.execute("COMMIT")
    except Exception:
        if own:
            con.execute("ROLLBACK")
        raise
    return done


def _rebuild(
    con: duckdb.DuckDBPyConnection, *, whole: bool, months_were_fresh: bool
) -> CubeRebuild:
    """The statements of :func:`rebuild_cubes`, inside its transaction."""
    con.execute(query("ratios/cube_slices_now"))  # TEMP _slices_now
    total_jobs, total_slices = _one(con, "SELECT coalesce(sum(jobs), 0), count(*) FROM _slices_now")
    if not whole:
        con.execute(render("ratios/cube_slices_changed", which=query("ratios/cube_slices_differ")))
        changed_jobs, _ = _one(con, "SELECT coalesce(sum(jobs), 0), count(*) FROM _slices_changed")
        whole = changed_jobs > WHOLE_SHARE * total_jobs
    if whole:
        con.execute(render("ratios/cube_slices_changed", which=query("ratios/cube_slices_all")))
    changed_jobs, changed = _one(
        con, "SELECT coalesce(sum(jobs), 0), count(*) FROM _slices_changed"
    )
    source = "jobs" if whole else "_slice_jobs"
    if not whole:
        con.execute(query("ratios/cube_slice_jobs"))  # TEMP VIEW _slice_jobs
    # With the per-month people cube fresh, the all-time people cube follows by difference and
    # no job outside the changed slices is read again; else the people are regrouped from all.
    by_difference = not whole and months_were_fresh
    _fine(con, source if by_difference else "jobs")
    if by_difference:
        con.execute(
            render("ratios/cube_people_next", rows=_people_fine_rows())
        )  # TEMP _people_next
        changes = render("ratios/cube_people_changes", same_person=_same_person("f"))
        people_same = _one(con, changes) == (0, 0)
        if not people_same:  # someone came or went: number everyone again, from every job
            by_difference = False
            _fine(con, "jobs")
    else:
        people_same = not whole and bool(_one(con, query("ratios/cube_people_same"))[0])
    for table in _SLICED_TABLES:
        if whole:
            con.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names
        else:
            con.execute(render("ratios/cube_slices_delete", table=table))
    con.execute(query("ratios/cube_refresh"))
    con.execute(render("ratios/cube_job_mix_refresh", source=source))
    refresh_usage_months(con, source)
    con.execute(query("ratios/cube_slices_store"))
    con.execute("DELETE FROM ratio_cube_people")
    if by_difference:
        con.execute(query("ratios/cube_people_cube_replace"))
        con.execute("DROP TABLE _people_next")
    else:
        _refresh_people(con, renumber=not people_same)
    kept = people_same and months_were_fresh
    if kept:
        _refresh_people_months_slices(con)
    else:
        for table in _MONTHS_TABLES:  # its state too: stale until its first use rebuilds it
            con.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names
    con.execute("DROP TABLE _ratio_fine")
    if not whole:
        con.execute("DROP VIEW _slice_jobs")
    return CubeRebuild(
        whole=whole,
        slices_rebuilt=changed,
        slices_total=total_slices,
        jobs_in_rebuilt_slices=changed_jobs,
        people_months_kept=kept,
        ratio_cube_rows=_one(con, "SELECT count(*) FROM ratio_cube")[0],
    )


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[int, ...]:
    row = con.execute(sql).fetchone()
    assert row is not None
    return tuple(int(v) for v in row)


def _fine(con: duckdb.DuckDBPyConnection, source: str) -> None:
    """TEMP ``_ratio_fine``: the two groupings of the jobs of ``source`` (ratios/cube_fine)."""
    con.execute(render("ratios/cube_fine", jobs=render("ratios/cube_jobs", source=source)))


def _refresh_people(con: duckdb.DuckDBPyConnection, *, renumber: bool) -> None:
    """Fill the emptied all-time people cube from ``_ratio_fine`` (every job's); with
    ``renumber``, number the people again (ratio_people) first."""
    if renumber:
        con.execute("DELETE FROM ratio_people")
        con.execute(query("ratios/cube_people_refresh"))
    con.execute(render("ratios/cube_people_cube_refresh", rows=_people_fine_rows()))


def _same_person(row: str) -> str:
    """The condition that ratio_people row ``p`` is the person of ``row`` (ratios/same_person)."""
    return render("ratios/same_person", row=row)


def _people_fine_rows() -> str:
    """The people rows of ``_ratio_fine`` under their pids (ratios/cube_people_fine_rows)."""
    return render("ratios/cube_people_fine_rows", same_person=_same_person("f"))


def _refresh_people_months(con: duckdb.DuckDBPyConnection, source: str, months: str) -> None:
    """Fill the emptied rows of the per-month people cubes from the jobs of ``source``;
    ``months`` names the rows of ``ratio_cube_people_months`` to regroup by ratio."""
    jobs = render("ratios/cube_jobs", source=source)
    con.execute(
        render("ratios/cube_people_months_refresh", jobs=jobs, same_person=_same_person("j"))
    )
    con.execute(render("ratios/cube_people_month_ratios_refresh", months=months))


def _refresh_people_months_slices(con: duckdb.DuckDBPyConnection) -> None:
    """Replace the changed slices of the per-month people cubes (the people numbering held)."""
    for table in _MONTHS_TABLES[:-1]:
        con.execute(render("ratios/cube_people_months_slices_delete", table=table))
    _refresh_people_months(con, "_slice_jobs", query("ratios/cube_people_months_changed"))


def refresh_people_months(con: duckdb.DuckDBPyConnection, *, temporary: bool = False) -> int:
    """Build ``ratio_cube_people_months`` (per pid, month, state and interactive label) from
    ``jobs`` on the current ``ratio_people``, and from it ``ratio_cube_people_month_ratios``
    (per pid, month and ratio), rebuilding the other cubes first when they are stale; return
    the first one's row count. ``temporary`` as in :func:`refresh_ratio_cube`.

    Called by the first account/user query with a month or interactive key, a state filter or
    month bounds (a stale one is never read), not by every ingest: it is the largest cube and
    takes longer to build than all the others together.
    """
    if not cube_is_fresh(con):
        refresh_ratio_cube(con, temporary=temporary)
    fp = _fingerprint(con)
    if temporary:
        _temp_copies(con, _MONTHS_TABLES)
    con.execute("BEGIN TRANSACTION")
    try:
        for table in _MONTHS_TABLES[:-1]:
            con.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names
        _refresh_people_months(con, "jobs", "ratio_cube_people_months")
        _write_state(con, "ratio_cube_people_months_state", fp)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    row = con.execute("SELECT count(*) FROM ratio_cube_people_months").fetchone()
    return int(row[0]) if row else 0


def store_fresh_cubes(db: str | os.PathLike[str]) -> bool:
    """Bring every stored cube of the database file ``db`` up to date (the per-month people
    cube included), so that read-only readers such as the dashboard's sessions find them fresh
    instead of each building a private copy (seconds per session on millions of jobs). Returns
    False, changing nothing, when the file cannot be opened for writing at once (another process
    holds it, or it is read-only) or its schema is older than this code (it is never migrated
    here: the readers report that with the command that upgrades it)."""
    from advisor.store import connect

    try:
        con = connect(db, migrate_schema=False, wait_s=0)
    except (StoreError, duckdb.Error, OSError):
        return False
    try:
        if not cube_is_fresh(con):
            refresh_ratio_cube(con)
        if not people_months_are_fresh(con):
            refresh_people_months(con)
        return True
    finally:
        con.close()


def ensure_ratio_cube(con: duckdb.DuckDBPyConnection) -> bool:
    """Make ``ratio_cube`` fresh for this connection: rebuild it in the file when writable, or
    as a TEMP table on a read-only connection. Returns True when it had to be rebuilt."""
    if cube_is_fresh(con):
        return False
    refresh_ratio_cube(con, temporary=is_read_only(con))
    return True


def job_mix(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, Any],
    *,
    use_table: bool | None = None,
) -> list[tuple[Any, ...]]:
    """The rows of recommend/job_mix for ``params`` ($partition, $gpu_type, $clusters, $start,
    $end): from ``job_mix_months`` when the bounds are open or month-aligned and the cubes are
    fresh (``use_table`` None), else from ``jobs``; ``use_table`` True or False forces one
    (True requires month-aligned bounds). The rows are the same either way."""
    aligned = all(_month_start(params.get(k)) for k in ("start", "end"))
    if use_table is None:
        use_table = aligned and cube_is_fresh(con)
    elif use_table and not aligned:
        raise StoreError("job_mix_months answers only month-aligned bounds")
    mix = query("recommend/job_mix_months" if use_table else "recommend/job_mix_jobs")
    return con.execute(render("recommend/job_mix", mix=mix), params).fetchall()


def _month_start(t: Any) -> bool:
    return t is None or (t.day == 1 and t.hour == t.minute == t.second == t.microsecond == 0)
