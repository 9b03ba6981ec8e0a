"""Derived tables: the summaries computed from ``jobs`` (the ratio cubes, ``job_mix_months``,
``usage_months``), and when they are rebuilt.

The tables are built here from base tables only: :mod:`~advisor.derived.cube` (their schema,
rules version, freshness and rebuild) and :mod:`~advisor.derived.usage_months` (the usage
table's builder and thresholds). The analytics (``advisor.ratios``, ``advisor.usage``) and the
advice (``advisor.recommend``) read them, and rebuild a stale one on demand through ``cube``;
nothing here imports them.

Ingest only ingests; the callers of a load rebuild what derives from it: the CLI's ``advisor
ingest`` after a successful load (:func:`refresh_after_load`), ``advisor db refresh``
(:func:`refresh_derived`), and the dashboard launcher before it serves (:func:`store_fresh`).
These three are the one place where a caller asks for a rebuild.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import duckdb

from advisor.derived.cube import (
    rebuild_cubes,
    refresh_people_months,
    refresh_ratio_cube,
    store_fresh_cubes,
)

Db = str | os.PathLike[str] | duckdb.DuckDBPyConnection | None


@dataclass(frozen=True)
class RefreshSummary:
    """What ``advisor db refresh`` rebuilt: the database file, the row count of each derived
    table, and the seconds it took."""

    db: str
    ratio_cube_rows: int
    people_months_rows: int
    seconds: float


def _open(db: Db) -> tuple[duckdb.DuckDBPyConnection, bool]:
    if isinstance(db, duckdb.DuckDBPyConnection):
        return db, False
    from advisor.store import connect

    return connect(db), True


def refresh_after_load(db: Db) -> int:
    """Rebuild the ratio summary tables after a load has committed, so that readers (``advisor
    ratios``, the read-only dashboard) find them fresh; returns the row count of
    ``ratio_cube``. The per-month people cube is left for its first query to build (it is the
    largest, and few loads are followed by such a query)."""
    con, owned = _open(db)
    try:
        return refresh_ratio_cube(con)
    finally:
        if owned:
            con.close()


def refresh_derived(db: str | os.PathLike[str] | None = None) -> RefreshSummary:
    """Rebuild every derived table of the database file ``db`` from ``jobs`` (None:
    ``$ADVISOR_DB`` / ``./advisor.duckdb``), fresh or not, every slice of it (whatever
    ``derived_slices`` says)."""
    from advisor.errors import NotFoundError
    from advisor.store import connect, resolve_db_path

    t0 = time.perf_counter()
    path = resolve_db_path(db)
    if not path.exists():
        raise NotFoundError(f"{path}: no such database (load one with `advisor ingest FILE`)")
    con = connect(path)
    try:
        cube = rebuild_cubes(con, whole=True).ratio_cube_rows  # the escape hatch: every slice
        months = refresh_people_months(con)
    finally:
        con.close()
    return RefreshSummary(
        db=str(path),
        ratio_cube_rows=cube,
        people_months_rows=months,
        seconds=round(time.perf_counter() - t0, 3),
    )


def store_fresh(db: str | os.PathLike[str]) -> bool:
    """Bring the stale derived tables of ``db`` up to date in the file, once, so that every
    dashboard session finds them fresh; False, changing nothing, when the file cannot be
    written at once (see :func:`advisor.derived.cube.store_fresh_cubes`)."""
    return store_fresh_cubes(db)
